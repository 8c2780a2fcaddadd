"""The cuda accelerator: ``torch.cuda`` on NVIDIA (CUDA) and AMD (ROCm, reported as HIP) GPUs.

:class:`CudaAccelerator` is the shared :class:`~accelhal.contract.device_module.DeviceModuleAccelerator` but for
what differs on cuda: fp16/bf16 support, Triton, NVTX ranges, host registration, ROCm's answers and the CUDA
flavour in ``vendor_versions()``. Importing this module imports torch. Each difference, and the DeepSpeed
defects fixed on the way: ``docs/backends.md``, "cuda" and "DeepSpeed defects fixed".
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

import torch

from accelhal.contract.device_module import DEVICE_CAPABILITIES, DeviceModuleAccelerator
from accelhal.contract.spec import Capability
from accelhal_backends.catalog import CUDA as SPEC
from accelhal_backends.cuda.flavour import flavour


def _is_hip() -> bool:
    return torch.version.hip is not None


class CudaAccelerator(DeviceModuleAccelerator):
    """NVIDIA and AMD GPUs through ``torch.cuda``."""

    spec = SPEC

    _bf16_excludes_emulation = True
    capabilities = DEVICE_CAPABILITIES | {Capability.HOST_REGISTRATION}

    supports_nvtx_domain = importlib.util.find_spec("nvtx") is not None
    """True where the ``nvtx`` package (NVTX domains) is installed; found without importing it."""

    def __init__(self) -> None:
        """Resolve ``torch.cuda``."""
        super().__init__()
        self._nvtx_domains: dict[str, Any] = {}

    def vendor_versions(self) -> dict[str, str]:
        """``{"hip": ...}`` on ROCm builds, else ``{"cuda": ...}`` (the toolkit torch was built with), and the flavour.

        ``"flavour"`` is the CUDA flavour's label (``"NVIDIA CUDA 12.8"``, ``"AMD ROCm (HIP) 6.3"``);
        device names refine it only where CUDA is initialised already (this never initialises it).
        """
        names = [self._m.get_device_name(i) for i in range(self.device_count())] if self._m.is_initialized() else []
        label = flavour(torch, names).label
        if _is_hip():
            return {"hip": str(torch.version.hip), "flavour": label}
        return {"cuda": str(torch.version.cuda), "flavour": label}

    def device_description(self, device_index: int) -> str:
        """The GPU's name; ``" (HIP)"`` appended on ROCm builds."""
        name = super().device_description(device_index)
        return f"{name} (HIP)" if _is_hip() else name

    # ------------------------------------------------------------------ dtypes
    def _major(self) -> int:
        major: int = self._m.get_device_capability()[0]
        return major

    def is_fp16_supported(self) -> bool:
        """Compute capability >= 7 (6.x with ``DS_ALLOW_DEPRECATED_FP16=1``); False without a GPU."""
        if not self.is_available():
            return False
        major = self._major()
        return major >= 7 or (major == 6 and os.environ.get("DS_ALLOW_DEPRECATED_FP16") == "1")

    # ------------------------------------------------------------------ triton
    def is_triton_supported(self) -> bool:
        """Compute capability >= 8 and the ``triton`` package installed."""
        return self.is_available() and self._major() >= 8 and importlib.util.find_spec("triton") is not None

    def prefer_triton_grouped_mm(self) -> bool:
        """True on sm7x/sm8x with Triton (``torch._grouped_mm`` is fused only from sm90); never on ROCm."""
        if _is_hip() or not self.is_triton_supported():
            return False
        return not hasattr(torch, "_grouped_mm") or self._major() < 9

    # ------------------------------------------------------------------ NVTX
    def _nvtx_domain(self, domain: str | None) -> Any:
        if domain is None or not self.supports_nvtx_domain:
            return None
        if domain not in self._nvtx_domains:
            nvtx = importlib.import_module("nvtx")  # the NVIDIA nvtx package, found at class creation
            self._nvtx_domains[domain] = nvtx.get_domain(domain)
        return self._nvtx_domains[domain]

    def range_push(self, msg: str, domain: str | None = None, category: str | None = None) -> None:
        """Open an NVTX range; in ``domain`` when the ``nvtx`` package is installed."""
        nvtx_domain = self._nvtx_domain(domain)
        if nvtx_domain is None:
            self._m.nvtx.range_push(msg)
        else:
            nvtx_domain.push_range(message=msg, category=category)

    def range_pop(self, domain: str | None = None) -> None:
        """Close the innermost NVTX range (of ``domain`` when given and supported)."""
        nvtx_domain = self._nvtx_domain(domain)
        if nvtx_domain is None:
            self._m.nvtx.range_pop()
        else:
            nvtx_domain.pop_range()

    # ------------------------------------------------------------------ host registration
    def register_host_memory(self, address: int, num_bytes: int) -> bool:
        """Page-lock ``num_bytes`` at ``address`` with ``cudaHostRegister``; raises on a CUDA error."""
        self._m.check_error(int(self._m.cudart().cudaHostRegister(address, num_bytes, 0)))
        return True

    def unregister_host_memory(self, address: int) -> None:
        """Undo :meth:`register_host_memory` (``cudaHostUnregister``)."""
        self._m.check_error(int(self._m.cudart().cudaHostUnregister(address)))
