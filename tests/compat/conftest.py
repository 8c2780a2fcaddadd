"""Fixtures for the DeepSpeed bridge tests: DeepSpeed imported once, its global state restored."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sharing import RunCache


@pytest.fixture(scope="session")
def ds() -> Iterator[Any]:
    """The deepspeed package, imported without leaving its environment write behind in this process.

    (``import deepspeed`` sets ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` process-wide.)
    """
    saved = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    import deepspeed
    import deepspeed.accelerator

    if saved is None:
        os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
    yield deepspeed


@pytest.fixture
def ds_accelerator_restored(ds: Any) -> Iterator[None]:
    """Put DeepSpeed's process-wide accelerator back after a test replaced it."""
    from deepspeed.accelerator import real_accelerator

    saved = real_accelerator.ds_accelerator
    yield
    real_accelerator.ds_accelerator = saved


@pytest.fixture
def cpu_twin(ds: Any) -> Any:
    """DeepSpeed's own CPU accelerator, for comparisons."""
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    return CPU_Accelerator()


@pytest.fixture(autouse=True)
def accelhal_on_cpu(clean_accelhal: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process comparisons are with DeepSpeed's CPU accelerator, also on a GPU machine."""
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cpu")


@pytest.fixture(autouse=True)
def no_deepspeed_hook_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up hook's variables are set only by the tests that mean to."""
    monkeypatch.delenv("ACCELHAL_DEEPSPEED", raising=False)
    monkeypatch.delenv("ACCELHAL_DEEPSPEED_DISABLE_OPS", raising=False)


@pytest.fixture(scope="session")
def deepspeed_ops_cache(request: pytest.FixtureRequest, run_cache: RunCache) -> Path:
    """accelhal's op cache for DeepSpeed's ops, kept between test runs in pytest's cache directory.

    DeepSpeed's ``cpu_adam`` compiles once (minutes on two busy cores); later runs load it.
    With ``-p no:cacheprovider`` it is the run's, shared by its workers.
    """
    cache = getattr(request.config, "cache", None)
    if cache is None:  # -p no:cacheprovider
        return run_cache.directory("deepspeed-ops", lambda directory: None)
    directory: Path = cache.mkdir("accelhal-deepspeed-ops")
    return directory
