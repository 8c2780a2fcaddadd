"""Memory: every figure is an int number of bytes; figures move with allocations where the device tracks them."""

from __future__ import annotations

import pytest
import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.spec import Capability
from accelhal.errors import UnsupportedFeatureError
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type

FIGURES = (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "total_memory",
    "available_memory",
)
UNKNOWABLE = ("total_memory", "available_memory")
"""Figures a backend may not have (:class:`~accelhal.UnsupportedFeatureError`): a device whose allocator keeps none."""
RESETS = ("reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached", "empty_cache")
MIB = 1 << 20


class MemoryTests(SuiteBase):
    """Memory figures and statistics of the current device."""

    @pytest.mark.parametrize("member", FIGURES)
    def test_figure_is_bytes(self, accelerator: Accelerator, member: str) -> None:
        try:
            value = self.call(accelerator, member)
        except UnsupportedFeatureError as exc:  # a device without the figure: accelhal info shows it as unknown
            if member not in UNKNOWABLE:
                raise
            pytest.skip(str(exc))
        expect_type(value, f"{member}()", int)
        expect(value >= 0, f"{member}()", "a number of bytes >= 0", value)
        index = accelerator.current_device()
        expect_type(self.call(accelerator, member, index), f"{member}({index})", int)

    def test_peaks_are_not_below_current(self, accelerator: Accelerator) -> None:
        for current, peak in (("memory_allocated", "max_memory_allocated"), ("memory_reserved", "max_memory_reserved")):
            now = self.call(accelerator, current)
            highest = self.call(accelerator, peak)
            expect(highest >= now, f"{peak}()", f"at least {current}() ({now})", highest)

    @pytest.mark.parametrize("member", RESETS)
    def test_reset_returns_none(self, accelerator: Accelerator, member: str) -> None:
        result = self.call(accelerator, member)
        expect(result is None, f"{member}()", "None", result)

    def test_memory_stats(self, accelerator: Accelerator) -> None:
        stats = accelerator.memory_stats()
        expect_type(stats, "memory_stats()", dict)
        expect(all(isinstance(k, str) for k in stats), "memory_stats()", "a dict keyed by str", stats)

    def test_figures_move_with_allocations(self, accelerator: Accelerator) -> None:
        self.require(accelerator, Capability.DEVICE_MEMORY_STATS)
        self.require_tensors(accelerator)
        accelerator.synchronize()
        before = accelerator.memory_allocated()
        block = torch.empty(4 * MIB, dtype=torch.uint8, device=accelerator.device())
        accelerator.synchronize()
        during = accelerator.memory_allocated()
        expect(
            during - before >= 4 * MIB,
            "memory_allocated()",
            f"to grow by >= {4 * MIB} bytes after allocating a 4 MiB tensor (from {before})",
            during,
        )
        expect(
            accelerator.max_memory_allocated() >= during,
            "max_memory_allocated()",
            f">= memory_allocated() ({during}) while the tensor lives",
            accelerator.max_memory_allocated(),
        )
        del block
        accelerator.synchronize()
        after = accelerator.memory_allocated()
        expect(after < during, "memory_allocated()", f"to fall below {during} once the tensor is freed", after)
