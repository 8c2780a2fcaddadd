"""The sdaa accelerator: Tecorigin SDAA through ``torch.sdaa`` (registered by ``torch_sdaa``).

Differs from the shared base only by its names, no graphs, no driver free-memory query
(available memory is total - allocated) and no device names or capabilities from the
runtime. Fixed from DeepSpeed: ``device()`` is a ``torch.device``, not the
``torch.sdaa.device`` context-manager class.
"""

from __future__ import annotations

from accelhal.contract import Accelerator
from accelhal.device_module import DeviceModuleAccelerator


class SdaaAccelerator(DeviceModuleAccelerator):
    """Tecorigin SDAA accelerators through ``torch.sdaa``."""

    _name = "sdaa"
    device_type = "sdaa"
    _vendor_package = "torch_sdaa"
    _module_name = "torch.sdaa"
    _install_hint = "install torch_sdaa and the Tecorigin runtime"
    _communication_backend_name = "tccl"
    _visible_devices_envs = ("SDAA_VISIBLE_DEVICES",)
    _export_envs = ("NCCL", "LD_LIBRARY", "PATH")

    # torch.sdaa documents no get_device_name/get_device_capability: the contract's answers
    device_description = Accelerator.device_description
    device_capability = Accelerator.device_capability
    available_memory = DeviceModuleAccelerator.available_memory_from_allocator
