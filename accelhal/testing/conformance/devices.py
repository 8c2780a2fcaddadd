"""Device management: indices are ints, names and ``torch.device`` objects agree, ``set_device`` round-trips."""

from __future__ import annotations

import pytest
import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.spec import DEVICES_ASKED, MAX_DEVICES
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type

RETURNS: dict[str, tuple[tuple[object, ...], type]] = {
    "current_device": ((), int),
    "device_count": ((), int),
    "device_name": ((), str),
    "current_device_name": ((), str),
    "device": ((), torch.device),
    "device_description": ((0,), str),
}
"""member -> (arguments, the one return type the contract promises)."""


class DeviceTests(SuiteBase):
    """Counting, naming and selecting devices."""

    @pytest.mark.parametrize("member", sorted(RETURNS))
    def test_return_type(self, accelerator: Accelerator, member: str) -> None:
        args, kind = RETURNS[member]
        expect_type(self.call(accelerator, member, *args), f"{member}({', '.join(map(repr, args))})", kind)

    def test_device_count(self, accelerator: Accelerator) -> None:
        count = accelerator.device_count()
        expect_type(count, "device_count()", int)
        if accelerator.is_available():
            expect(count >= 1, "device_count()", "an int >= 1 while is_available() is True", count)
        else:
            expect(count >= 0, "device_count()", "an int >= 0", count)
        expect(count <= MAX_DEVICES, "device_count()", f"an int <= {MAX_DEVICES} (MAX_DEVICES)", count)

    def test_names_agree_with_devices(self, accelerator: Accelerator) -> None:
        kind = accelerator.device_type
        expect(
            accelerator.device_name() == kind, "device_name()", f"the device type {kind!r}", accelerator.device_name()
        )
        current = accelerator.current_device()
        expect(
            torch.device(accelerator.current_device_name()) == accelerator.device(),
            "current_device_name()",
            f"the name of device() ({accelerator.device()})",
            accelerator.current_device_name(),
        )
        expect(accelerator.device().type == kind, "device()", f"a torch.device of type {kind!r}", accelerator.device())
        for index in range(min(max(1, accelerator.device_count()), DEVICES_ASKED)):
            name = accelerator.device_name(index)
            expect(
                torch.device(name) == accelerator.device(index),
                f"device_name({index})",
                f"the name of device({index}) ({accelerator.device(index)})",
                name,
            )
        expect(
            accelerator.device(current) == accelerator.device(),
            "device()",
            f"device(current_device()) ({accelerator.device(current)})",
            accelerator.device(),
        )

    def test_set_device_round_trip(self, accelerator: Accelerator) -> None:
        original = accelerator.current_device()
        try:
            for index in range(min(accelerator.device_count(), DEVICES_ASKED)):
                accelerator.set_device(index)
                expect(
                    accelerator.current_device() == index,
                    "current_device()",
                    f"{index} after set_device({index})",
                    accelerator.current_device(),
                )
        finally:
            accelerator.set_device(original)
        expect(
            accelerator.current_device() == original,
            "set_device()",
            f"to restore {original}",
            accelerator.current_device(),
        )

    def test_synchronize(self, accelerator: Accelerator) -> None:
        expect(accelerator.synchronize() is None, "synchronize()", "None", accelerator.synchronize())
        index = accelerator.current_device()
        expect(accelerator.synchronize(index) is None, f"synchronize({index})", "None", accelerator.synchronize(index))

    def test_on_accelerator(self, accelerator: Accelerator) -> None:
        self.require_tensors(accelerator)
        on_device = torch.zeros(2, device=accelerator.device())
        expect(accelerator.on_accelerator(on_device) is True, "on_accelerator(tensor on the device)", "True", False)
        if accelerator.device_type != "cpu":
            host = torch.zeros(2)
            expect(accelerator.on_accelerator(host) is False, "on_accelerator(host tensor)", "False", True)
