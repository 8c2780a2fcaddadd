"""Shared fixtures: a clean accelhal state per test, and real installed test distributions."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import accelhal
from accelhal import selection
from tests import parallel
from tests.distributions import lay_out
from tests.sharing import RunCache, run_directory
from tests.venvs import REPO, compile_checkout

ACCELHAL_VARIABLES = (
    "ACCELHAL_ACCELERATOR",
    "DS_ACCELERATOR",
    "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD",
    "ACCELHAL_PLUGINS",
    "ACCELHAL_BLOCK_PLUGINS",
    "ACCELHAL_STRICT",
    "LOCAL_RANK",
    "LOCAL_SIZE",
    "LOCAL_WORLD_SIZE",
)


@pytest.fixture(autouse=True)
def clean_accelhal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no cached accelerator and none of accelhal's variables set."""
    for name in ACCELHAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    accelhal.reset_accelerator()
    yield
    accelhal.reset_accelerator()


InstallDistribution = Callable[..., Path]


@pytest.fixture
def install_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InstallDistribution]:
    """Install a distribution the way pip lays it out: modules plus ``<name>-<version>.dist-info``.

    ``install_distribution("acme-accel", {"acme_plugin": "...source..."}, entry_points={"acme": "acme_plugin"})``
    puts both in a fresh directory on ``sys.path``, so ``importlib.metadata`` discovers the
    entry points (and, through its RECORD, which files it owns) exactly as it would after
    ``pip install``; ``other_groups`` adds entry points of other groups
    (``{"torch.backends": {...}}``). The directory is the returned path's parent.
    """
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    added: list[str] = []

    def install(
        name: str,
        modules: dict[str, str],
        entry_points: dict[str, str],
        version: str = "1.0",
        other_groups: dict[str, dict[str, str]] | None = None,
    ) -> Path:
        added.extend(modules)
        files = {f"{module}.py": textwrap.dedent(source) for module, source in modules.items()}
        groups = {"accelhal": entry_points, **(other_groups or {})}
        dist_info = lay_out(site, name, version, groups, files=files)
        importlib.invalidate_caches()
        return dist_info

    yield install
    for module in added:
        sys.modules.pop(module, None)
    selection.reset_accelerator()


@pytest.fixture(scope="session")
def run_cache(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> RunCache:
    """Artefacts built once per test run, shared by all its xdist workers (:mod:`tests.sharing`)."""
    return RunCache(run_directory(pytestconfig, tmp_path_factory) / "run-cache")


@pytest.fixture(scope="session")
def accelhal_wheel(run_cache: RunCache) -> Path:
    """A wheel of this checkout, built once per test run."""
    return run_cache.wheel(REPO)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``-n`` without ``--dist`` spreads the suite as :mod:`tests.parallel` says."""
    parallel.choose_distribution(config)


INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"
"""Where Inductor keeps what it compiled (torch's default, ``/tmp/torchinductor_<user>``, outlives a run)."""


def pytest_configure(config: pytest.Config) -> None:
    """Before any worker or child interpreter starts: byte-compile the checkout; give Inductor this run's cache.

    The suite starts hundreds of interpreters that import accelhal; where
    ``PYTHONDONTWRITEBYTECODE`` is set (as on CI machines), none of them writes the
    ``.pyc`` files it compiled, so each compiles accelhal again (about 0.1 s of CPU).
    Inductor compiles into a directory of the run (every process of the run shares it,
    removed at its end): what the compile tests compile is compiled as on a new machine,
    never served from another run's kernels.
    """
    if not hasattr(config, "workerinput"):
        compile_checkout()
        os.environ[INDUCTOR_CACHE] = tempfile.mkdtemp(prefix="accelhal-tests-inductor-")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the run's Inductor cache (made by :func:`pytest_configure`) and the groups file of the workers."""
    if not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ.pop(INDUCTOR_CACHE, ""), ignore_errors=True)
        parallel.forget_groups(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Each xdist worker is told the distribution chosen here and where to write the groups (:mod:`tests.parallel`)."""
    parallel.tell_worker(node)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole modules (or ``xdist_group`` groups) to one worker each, the slow ones first (:mod:`tests.parallel`)."""
    return parallel.make_scheduler(config, log)


ADAPTER_TESTS = Path(__file__).resolve().parent / "compat"
"""Every test under this directory is a framework adapter's (marked ``adapter``: outside the core suite)."""

DEVICE_TESTS = Path(__file__).resolve().parent / "privateuse1"
"""Every test under this directory runs on the test tree's device, a C++ extension, mostly in processes of its own
(marked ``slow``: the README's suite leaves them out)."""

ADAPTER_FRAMEWORKS = (
    "deepspeed",
    "lightning",
    "pytorch_lightning",
    "accelerate",
    "ray",
    "transformers",
    "tests.compat",
)
"""What only an adapter's test imports: a test module elsewhere that imports one is marked ``adapter`` itself
(``tests/test_core_suite.py`` checks it)."""


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the adapters' tests ``adapter``, the device's ``slow``; order the units for xdist; skip GPU tests on CPU."""
    for item in items:
        if item.path.is_relative_to(ADAPTER_TESTS):
            item.add_marker(pytest.mark.adapter)
        if item.path.is_relative_to(DEVICE_TESTS):
            item.add_marker(pytest.mark.slow)
    parallel.order_for_workers(config, items)
    needs_gpu = [item for item in items if item.get_closest_marker("cuda") or item.get_closest_marker("multigpu")]
    if not needs_gpu:
        return
    import torch

    count = torch.cuda.device_count()  # NVML-based: creates no CUDA context
    for item in needs_gpu:
        if count == 0:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU; run `pytest -m cuda` on the GPU machine"))
        elif item.get_closest_marker("multigpu") and count < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs two CUDA GPUs, {count} visible"))


LEFT_OUT = pytest.StashKey[dict[str, int]]()
"""How many tests of each tier ``-m`` left out (``addopts`` does, in the README's suite)."""

TIERS = {
    "adapter": "the adapters' (tests/compat), run by nox -s \"adapters(end='newest')\" and \"adapters(end='floor')\"",
    "slow": "the slow ones, run by nox -s slow (CI: the core suite at both ends, nox -t core-ends)",
}
"""The markers of the tests the README's suite leaves to CI's other jobs, and which job runs them."""


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Count the tests of each tier that ``-m`` left out."""
    if items:
        config = items[0].config
        counts = config.stash.setdefault(LEFT_OUT, {})
        for item in items:
            tier = next((marker for marker in TIERS if item.get_closest_marker(marker)), None)
            if tier is not None:
                counts[tier] = counts.get(tier, 0) + 1
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: its controller writes the summary
            config.workeroutput["left_out"] = counts


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """Take a worker's counts of the tests left out (each worker collects them all)."""
    counts = node.config.stash.setdefault(LEFT_OUT, {})
    for tier, count in getattr(node, "workeroutput", {}).get("left_out", {}).items():
        counts[tier] = max(counts.get(tier, 0), count)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say which tiers ``-m`` left out, how to run them here, and which CI job runs them."""
    for tier, count in config.stash.get(LEFT_OUT, {}).items():
        terminalreporter.write_line(f"{count} tests left out by -m: {TIERS[tier]}; `-m {tier}` runs them here")
