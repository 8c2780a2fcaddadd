"""The mlu accelerator: Cambricon MLUs through ``torch.mlu`` (registered by ``torch_mlu``).

Differs from the shared base by graphs (``MLUGraph``), profiler ranges (``torch.mlu.cnpx``),
Triton support (as in DeepSpeed) and its names. Fixed from DeepSpeed: ``device()`` is a
``torch.device`` (DeepSpeed returned the ``torch.mlu.device`` context-manager class) and every
member keeps the contract's signature (``initial_seed()`` without a ``seed`` argument).
"""

from __future__ import annotations

from accelhal.contract.device_module import DeviceModuleAccelerator
from accelhal_backends.catalog import MLU as SPEC


class MluAccelerator(DeviceModuleAccelerator):
    """Cambricon MLUs through ``torch.mlu``."""

    spec = SPEC

    def is_triton_supported(self) -> bool:
        """True where a device is visible (Cambricon ships Triton for MLU)."""
        return self.is_available()
