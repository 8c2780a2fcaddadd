"""The xla backend with torch_xla installed: ``nox -s xla`` (torch 2.9 and torch_xla 2.9), CI's second step.

Run with ``PJRT_DEVICE=CPU`` (XLA's CPU client; ``CPU_NUM_DEVICES=2`` gives it two devices):
``PJRT_DEVICE=CPU CPU_NUM_DEVICES=2 .venv-xla/bin/python -m pytest tests/xla``. Every test here is
skipped where torch_xla is not installed (the main suite's environment, torch 2.13).
"""

from __future__ import annotations

import importlib.util
import os

import pytest


def require_torch_xla(*, cpu_client: bool = False) -> None:
    """Skip the calling test module (one skip, with the reason) without torch_xla, or without the CPU client."""
    if importlib.util.find_spec("torch_xla") is None:
        pytest.skip(
            "torch_xla is not installed: the xla tests run in their own environment with torch 2.9 (nox -s xla)",
            allow_module_level=True,
        )
    if cpu_client and os.environ.get("PJRT_DEVICE") != "CPU":
        pytest.skip("run with PJRT_DEVICE=CPU (XLA's CPU client; nox -s xla sets it)", allow_module_level=True)
