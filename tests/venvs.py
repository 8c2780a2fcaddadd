"""Fresh virtual environments for end-to-end tests: real ``pip install`` of real wheels.

A fresh venv (:func:`fresh_venv`) reuses the current interpreter's installed packages
(torch, pydantic, ...) through a ``.pth`` file, so no multi-GB download happens;
accelhal and the plugin under test are installed into it from wheels built here,
exactly as a user's ``pip`` would.

A vendor venv (:func:`vendor_venv`) is the real thing instead: its own torch and the
vendor's wheel from the package index, installed by pip with their dependencies, as a
user of that vendor has them. It is built once per set of requirements and kept under
``~/.cache/accelhal-tests`` (``ACCELHAL_TEST_VENVS`` moves it); pip's own cache keeps
the downloads. It is never changed once built: accelhal itself is installed, from the
run's wheel of the checkout, into a thin venv over it that belongs to the test run
(:func:`fresh_venv` with ``over=``), so that test runs of different checkouts at the
same time never see each other's accelhal.
"""

from __future__ import annotations

import compileall
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from tests.locks import locked
from tests.sharing import RunCache

REPO = Path(__file__).resolve().parent.parent


CHECKOUT_SOURCES = ("accelhal", "backends", "tests", "benchmarks")
"""The checkout's Python trees that the suite's child interpreters import or run."""


def compile_checkout() -> None:
    """Write the ``.pyc`` files of :data:`CHECKOUT_SOURCES` (only those that are missing or stale)."""
    for tree in CHECKOUT_SOURCES:
        compileall.compile_dir(REPO / tree, quiet=2)


def child_environ(**extra: str) -> dict[str, str]:
    """This process's environment without ``PYTHONPATH`` (a child sees only its own venv), plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **extra}


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` (in :func:`child_environ` unless ``env`` is given); on failure raise with its output."""
    env = kwargs.pop("env", None) or child_environ()
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result  # type: ignore[no-any-return]


def build_wheel(source: Path, out: Path) -> Path:
    """Build ``source`` into a wheel in ``out`` without network or build isolation.

    setuptools' working files (``build/``, the ``.egg-info``) go to a temporary directory, not
    into ``source``: a ``build/lib`` kept there puts files since removed from the source into
    every later wheel. The directory is named by setuptools' ``DIST_EXTRA_CONFIG``.
    """
    before = set(out.glob("*.whl"))
    with tempfile.TemporaryDirectory(prefix="accelhal-wheel-build-") as scratch:
        config = Path(scratch, "setup.cfg")
        config.write_text(f"[build]\nbuild_base = {scratch}/build\n[egg_info]\negg_base = {scratch}\n")
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out)]
        run([*cmd, str(source)], env=child_environ(DIST_EXTRA_CONFIG=str(config)))
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel


def _purelib(python: Path) -> str:
    return run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()


def fresh_venv(path: Path, over: Path | None = None) -> Path:
    """Create a venv at ``path`` that sees this interpreter's site-packages (or those of the venv of ``over``).

    Returns its python. What is installed into it comes first; the packages it sees
    through the other venv are only read.
    """
    run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    python = path / "bin" / "python"
    if over is None:
        # this interpreter's site-packages, and those it reaches through .pth files (a venv layered on another)
        bases = [sysconfig.get_paths()["purelib"], *(p for p in sys.path if p.endswith("site-packages"))]
    else:
        bases = [_purelib(over)]
    Path(_purelib(python), "_base_site.pth").write_text("".join(f"{p}\n" for p in dict.fromkeys(bases)))
    return python


def pip_install(python: Path, *wheels: Path) -> None:
    """Install wheels into the venv of ``python`` (using this interpreter's pip, targeted at it)."""
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", *map(str, wheels)])


CACHE_VARIABLE = "ACCELHAL_TEST_VENVS"
"""Where :func:`vendor_venv` keeps its environments (default ``~/.cache/accelhal-tests``)."""
_COMPLETE = "accelhal-test-venv.json"


def _accelhal_dependencies() -> list[str]:
    """accelhal's own requirements (without the extras'), as the installed metadata lists them."""
    return [r for r in importlib.metadata.requires("accelhal") or [] if "extra ==" not in r]


def _cached(name: str, key_inputs: object) -> Path:
    """The cache directory for ``name`` built from ``key_inputs`` (their hash is part of its name)."""
    key = hashlib.sha256(json.dumps(key_inputs, sort_keys=True).encode()).hexdigest()[:16]
    root = Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "accelhal-tests")
    return root / f"{name}-{key}"


def prefix_install(name: str, *requirements: str) -> Path:
    """``pip install --prefix`` of ``requirements`` (no dependencies) into a cached directory; returns it.

    For packages whose files would clash with the test environment's own (MPICH's ``bin/mpiexec``
    beside Open MPI's), or that are other releases of the test environment's own packages (an older
    transformers): ``--ignore-installed``, without which pip uninstalls those from the test environment.
    Built once and kept beside the vendor venvs.
    """
    key_inputs = {"python": sys.version, "requirements": requirements}
    path = _cached(f"prefix-{name}", key_inputs)
    with locked(path):
        if not (path / _COMPLETE).is_file():
            shutil.rmtree(path, ignore_errors=True)
            pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed"]
            run([*pip, "--prefix", str(path), *requirements])
            (path / _COMPLETE).write_text(json.dumps(key_inputs, indent=2))
    return path


def vendor_venv(name: str, *steps: list[str], wheel: Path, run_cache: RunCache) -> Path:
    """A real venv: each of ``steps`` is one ``pip install`` of requirements; returns the python that has accelhal.

    ``name`` labels the cache directory. accelhal's own dependencies are installed with
    the first step (so ``torch==...`` there decides which torch they see). accelhal itself
    (``wheel``) goes into a thin venv over the cached one, made once per test run in
    ``run_cache``; the returned python is that venv's.
    """
    key_inputs = {"python": sys.version, "steps": steps, "accelhal": _accelhal_dependencies(), "layout": 2}
    path = _cached(f"venv-{name}", key_inputs)
    python = path / "bin" / "python"
    with locked(path):
        if not (path / _COMPLETE).is_file():
            shutil.rmtree(path, ignore_errors=True)  # an earlier build that did not finish
            run([sys.executable, "-m", "venv", "--without-pip", str(path)])
            for number, requirements in enumerate(steps):
                extra = _accelhal_dependencies() if number == 0 else []
                run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *requirements, *extra])
            (path / _COMPLETE).write_text(json.dumps(key_inputs, indent=2))

    def with_accelhal(directory: Path) -> None:
        pip_install(fresh_venv(directory / "venv", over=python), wheel)

    return run_cache.directory(path.name, with_accelhal) / "venv" / "bin" / "python"
