"""Fixtures of the op-builder tests: one build cache per session, a clean accelhal per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import accelhal
from tests.sharing import RunCache

HERE = Path(__file__).resolve().parent

OPS_VARIABLES = (
    "ACCELHAL_ACCELERATOR",
    "DS_ACCELERATOR",
    "ACCELHAL_STRICT",
    "ACCELHAL_PLUGINS",
    "ACCELHAL_BLOCK_PLUGINS",
    "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD",
    "ACCELHAL_OPS_LOCK_TIMEOUT",
    "ACCELHAL_OPS_LOCK_STALE",
)


@pytest.fixture(scope="session")
def session_cache(run_cache: RunCache) -> Path:
    """The build cache shared by every test of the run that may reuse a build (each distinct build compiles once)."""
    return run_cache.directory("ops-cache", lambda directory: None)


@pytest.fixture(autouse=True)
def ops_environment(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point ACCELHAL_OPS_CACHE at the session cache, clear accelhal's variables, reset selection."""
    for name in OPS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACCELHAL_OPS_CACHE", str(session_cache))
    accelhal.reset_accelerator()
    yield session_cache
    accelhal.reset_accelerator()
