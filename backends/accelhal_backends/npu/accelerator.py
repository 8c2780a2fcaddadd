"""The npu accelerator: Huawei Ascend NPUs through ``torch.npu`` (registered by ``torch_npu``).

Differs from the shared base by graphs (``NPUGraph``), host registration through the ACL
runtime (``torch.npu.npurt()``, mapped registration, 4096-byte alignment) and its names.
Fixed from DeepSpeed: ``supported_dtypes()`` lists bfloat16 only where
``is_bf16_supported()`` says so; tensor factories are ordinary tensors on the NPU.
"""

from __future__ import annotations

from accelhal.contract.device_module import DEVICE_CAPABILITIES, DeviceModuleAccelerator
from accelhal.contract.spec import Capability
from accelhal_backends.catalog import NPU as SPEC

ACL_SUCCESS = 0
ACL_HOST_REG_MAPPED = 0x2
"""Page-lock and map into the device; keeps full DMA bandwidth (needs 4 KiB-aligned addresses)."""


class NpuAccelerator(DeviceModuleAccelerator):
    """Huawei Ascend NPUs through ``torch.npu``."""

    spec = SPEC

    capabilities = DEVICE_CAPABILITIES | {Capability.HOST_REGISTRATION}

    def pin_memory_alignment(self) -> int:
        """4096: mapped registration needs page-aligned addresses."""
        return 4096

    def register_host_memory(self, address: int, num_bytes: int) -> bool:
        """Register page-locked host memory with the ACL runtime (mapped); raises on an ACL error."""
        rc = int(self._m.npurt().npuHostRegister(address, num_bytes, ACL_HOST_REG_MAPPED))
        if rc != ACL_SUCCESS:
            raise RuntimeError(f"npuHostRegister({address:#x}, {num_bytes}) failed with ACL error {rc}")
        return True

    def unregister_host_memory(self, address: int) -> None:
        """Undo :meth:`register_host_memory`; raises on an ACL error (the memory must stay alive then)."""
        rc = int(self._m.npurt().npuHostUnregister(address))
        if rc != ACL_SUCCESS:
            raise RuntimeError(f"npuHostUnregister({address:#x}) failed with ACL error {rc}")
