"""The conformance suite on the cuda backend.

On the GPU machine: ``python3 -m pytest tests/gpu/test_cuda_conformance.py -rs``.

Skipped (with the reason) where no CUDA device is visible. The probe-cost and fork-safety
tests run in fresh subprocesses, so it does not matter that this process initialises CUDA.
"""

from __future__ import annotations

import pytest

from accelhal.testing.conformance import ConformanceSuite

pytestmark = pytest.mark.cuda


class TestCudaConformance(ConformanceSuite):
    """Every conformance group on the cuda backend."""

    backend = "cuda"
