"""The broken accelerator: one fault per conformance group under test."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from accelhal_backends.cpu.accelerator import CpuAccelerator
from broken_accel import runtime


class BrokenAccelerator(CpuAccelerator):
    """The cpu accelerator with deliberate faults."""

    _name = "broken"

    @property
    def module(self) -> ModuleType:
        """The runtime, whose ``is_initialized()`` the probe-cost test reads."""
        return runtime

    def current_device(self) -> int:
        """Fault: a string index (DeepSpeed's cpu accelerator did this)."""
        return str(super().current_device())  # type: ignore[return-value]

    @property
    def Event(self) -> Any:
        """Fault: the runtime has no Event class, so the member is missing."""
        return runtime.Event  # type: ignore[attr-defined]

    def supported_dtypes(self) -> list[torch.dtype]:
        """Fault: claims float8, which cannot even add on this device."""
        return [*super().supported_dtypes(), torch.float8_e4m3fn]

    def stream(self, stream: Any) -> Any:
        """Fault: returns the stream instead of a context manager."""
        return stream
