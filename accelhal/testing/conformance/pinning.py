"""Pinning: page-locked host buffers where the backend pins, ordinary host tensors otherwise."""

from __future__ import annotations

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.spec import Capability
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type


class PinningTests(SuiteBase):
    """``pin_memory``, ``pin_empty``, ``pin_empty_like``, ``is_pinned`` and the alignment."""

    def test_pin_memory_keeps_values(self, accelerator: Accelerator) -> None:
        self.require_tensors(accelerator)
        host = torch.arange(6, dtype=torch.float32)
        pinned = accelerator.pin_memory(host)
        expect_type(pinned, "pin_memory(tensor)", torch.Tensor)
        expect(torch.equal(pinned, host), "pin_memory(tensor)", f"the same values {host.tolist()}", pinned)
        expect(pinned.device.type == "cpu", "pin_memory(tensor)", "a host tensor", pinned.device)
        expect_type(accelerator.is_pinned(pinned), "is_pinned(tensor)", bool)

    def test_pinned_buffers(self, accelerator: Accelerator) -> None:
        self.require_tensors(accelerator)
        empty = accelerator.pin_empty(2, 3, dtype=torch.float16)
        expect(
            tuple(empty.shape) == (2, 3) and empty.dtype == torch.float16,
            "pin_empty(2, 3, dtype=float16)",
            "a (2, 3) float16 tensor",
            empty,
        )
        like = accelerator.pin_empty_like(torch.zeros(4, 5))
        expect(tuple(like.shape) == (4, 5), "pin_empty_like(zeros(4, 5))", "a (4, 5) tensor", like)
        template = torch.zeros(3, 2)
        fresh = accelerator.pin_memory(template, make_copy=False, match_shape=False)
        if fresh is template and Capability.PINNING not in accelerator.capabilities:
            return  # nothing to page-lock for: the tensor itself, as DeepSpeed's CPU_Accelerator answers
        expect(
            tuple(fresh.shape) == (6,), "pin_memory(t, make_copy=False, match_shape=False)", "a flat (6,) buffer", fresh
        )

    def test_pinning_page_locks(self, accelerator: Accelerator) -> None:
        self.require(accelerator, Capability.PINNING)
        self.require_tensors(accelerator)
        pinned = accelerator.pin_memory(torch.ones(16))
        expect(
            accelerator.is_pinned(pinned) is True,
            "is_pinned(pin_memory(t))",
            "True (the backend declares 'pinning')",
            False,
        )
        expect(accelerator.is_pinned(torch.ones(16)) is False, "is_pinned(ordinary tensor)", "False", True)

    def test_alignment(self, accelerator: Accelerator) -> None:
        alignment = accelerator.pin_memory_alignment()
        expect_type(alignment, "pin_memory_alignment()", int)
        expect(alignment >= 1, "pin_memory_alignment()", "an int >= 1", alignment)
