"""The mlu accelerator: Cambricon MLUs through ``torch.mlu`` (registered by ``torch_mlu``).

Differs from the shared base by graphs (``MLUGraph``), profiler ranges (``torch.mlu.cnpx``),
Triton support (as in DeepSpeed) and its names. Fixed from DeepSpeed: ``device()`` is a
``torch.device`` (DeepSpeed returned the ``torch.mlu.device`` context-manager class) and every
member keeps the contract's signature (``initial_seed()`` without a ``seed`` argument).
"""

from __future__ import annotations

from accelhal.device_module import DEVICE_CAPABILITIES, DeviceModuleAccelerator, GraphDeviceModuleAccelerator
from accelhal.spec import Capability


class MluAccelerator(GraphDeviceModuleAccelerator):
    """Cambricon MLUs through ``torch.mlu``."""

    _name = "mlu"
    device_type = "mlu"
    _vendor_package = "torch_mlu"
    _module_name = "torch.mlu"
    _install_hint = "install torch_mlu and the Cambricon Neuware SDK"
    _graph_class = "MLUGraph"
    _ranges_module = "cnpx"
    available_memory = DeviceModuleAccelerator.available_memory_from_allocator
    _communication_backend_name = "cncl"
    _visible_devices_envs = ("MLU_VISIBLE_DEVICES",)
    _export_envs = ("NEUWARE_HOME", "CNCL", "LD_LIBRARY", "PATH")
    capabilities = DEVICE_CAPABILITIES | {Capability.GRAPHS, Capability.RANGES}

    def is_triton_supported(self) -> bool:
        """True where a device is visible (Cambricon ships Triton for MLU)."""
        return self.is_available()
