"""The xpu accelerator: Intel GPUs through stock torch's ``torch.xpu``.

Only functions that ``torch.xpu`` really has are called (DeepSpeed's backend called
``reset_max_memory_allocated``/``reset_max_memory_reserved``, which it lacks: here both
resets go through ``reset_peak_memory_stats``). ``torch.xpu`` has no ``default_stream``:
the default stream is the one a thread starts with, so it is read once per device from a
fresh thread (DeepSpeed returned the caller's *current* stream instead).
"""

from __future__ import annotations

from typing import Any

from accelhal.contract.device_module import DeviceModuleAccelerator, default_streams
from accelhal_backends.catalog import XPU as SPEC


class XpuAccelerator(DeviceModuleAccelerator):
    """Intel GPUs through ``torch.xpu``."""

    spec = SPEC

    _bf16_excludes_emulation = True

    def __init__(self) -> None:
        """Resolve ``torch.xpu``."""
        super().__init__()
        self._default_streams = default_streams(self._m.current_stream)

    def default_stream(self, device_index: int | None = None) -> Any:
        """The stream a new thread starts with on ``device_index`` (the device's default stream)."""
        return self._default_streams[self._index(device_index)]
