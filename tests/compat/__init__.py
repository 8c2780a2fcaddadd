"""Tests of accelhal.compat: bridges to other frameworks, run against the real frameworks."""

from __future__ import annotations

import importlib.util

import pytest

requires_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="needs the deepspeed extra: pip install 'accelhal[deepspeed]'",
)
