"""RNG: states round-trip, seeding reproduces, generators are torch generators."""

from __future__ import annotations

import pytest
import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.errors import UnsupportedFeatureError
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type


class RngTests(SuiteBase):
    """The random number generators of the current device."""

    def test_state_is_a_byte_tensor(self, accelerator: Accelerator) -> None:
        state = accelerator.get_rng_state()
        expect_type(state, "get_rng_state()", torch.Tensor)
        expect(state.dtype == torch.uint8, "get_rng_state()", "a torch.uint8 tensor", state.dtype)

    def test_state_round_trip(self, accelerator: Accelerator) -> None:
        saved = accelerator.get_rng_state()
        try:
            accelerator.manual_seed(20240607)
            state = accelerator.get_rng_state()
            accelerator.manual_seed(7)
            accelerator.set_rng_state(state)
            restored = accelerator.get_rng_state()
            expect(
                torch.equal(restored.cpu(), state.cpu()),
                "set_rng_state()/get_rng_state()",
                "get_rng_state() to return the state just set",
                restored,
            )
            index = accelerator.current_device()
            expect(
                torch.equal(accelerator.get_rng_state(index).cpu(), state.cpu()),
                f"get_rng_state({index})",
                "the current device's state",
                accelerator.get_rng_state(index),
            )
        finally:
            accelerator.set_rng_state(saved)

    def test_seeding_reproduces(self, accelerator: Accelerator) -> None:
        saved = accelerator.get_rng_state()
        try:
            accelerator.manual_seed(1234)
            first = accelerator.get_rng_state()
            expect(
                accelerator.initial_seed() == 1234,
                "initial_seed()",
                "1234 after manual_seed(1234)",
                accelerator.initial_seed(),
            )
            accelerator.manual_seed(99)
            accelerator.manual_seed(1234)
            expect(
                torch.equal(accelerator.get_rng_state().cpu(), first.cpu()),
                "manual_seed(1234)",
                "the same generator state each time",
                accelerator.get_rng_state(),
            )
            accelerator.manual_seed_all(4321)
            expect(
                accelerator.initial_seed() == 4321,
                "initial_seed()",
                "4321 after manual_seed_all(4321)",
                accelerator.initial_seed(),
            )
        finally:
            accelerator.set_rng_state(saved)

    def test_seeded_draws_reproduce(self, accelerator: Accelerator) -> None:
        self.require_tensors(accelerator)
        saved = accelerator.get_rng_state()
        try:
            accelerator.manual_seed(1234)
            first = torch.rand(8, device=accelerator.device()).cpu()
            accelerator.manual_seed(1234)
            second = torch.rand(8, device=accelerator.device()).cpu()
            expect(
                torch.equal(first, second),
                "manual_seed(1234)",
                f"the same draws twice ({first.tolist()})",
                second.tolist(),
            )
        finally:
            accelerator.set_rng_state(saved)

    def test_default_generator(self, accelerator: Accelerator) -> None:
        index = accelerator.current_device()
        try:
            generator = accelerator.default_generator(index)
        except UnsupportedFeatureError as exc:  # the contract's answer where the runtime has no torch.Generator
            pytest.skip(str(exc))
        expect_type(generator, f"default_generator({index})", torch.Generator)
