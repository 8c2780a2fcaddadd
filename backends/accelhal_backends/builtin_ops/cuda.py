"""The cuda backend's built-in op builders (a C++ binding plus a ``.cu`` kernel through nvcc)."""

from __future__ import annotations

import os
import shutil
from typing import ClassVar

from accelhal.ops.builder import Compatibility, OpBuilder


class FusedAdamWBuilder(OpBuilder):
    """In-place AdamW step over flat float32 CUDA tensors (one kernel), matching ``torch.optim.AdamW``.

    >>> adamw = get_accelerator().create_op_builder("FusedAdamWBuilder").load()   # on cuda
    >>> adamw.adamw_step(param, grad, exp_avg, exp_avg_sq, 1e-3, 0.9, 0.999, 1e-8, 0.01, step)
    """

    NAME: ClassVar[str] = "fused_adamw_cuda"
    BACKEND: ClassVar[str] = "cuda"

    def sources(self) -> list[str]:
        """The binding (host compiler) and the kernel (nvcc)."""
        return ["csrc/fused_adamw_cuda.cpp", "csrc/fused_adamw_cuda_kernel.cu"]

    def nvcc_args(self) -> list[str]:
        """Optimise; fast math stays off so results track torch's own kernels."""
        return ["-O3"]

    def key_environment(self) -> tuple[str, ...]:
        """The host compilers plus what picks nvcc and the target architectures."""
        return (*super().key_environment(), "CUDA_HOME", "TORCH_CUDA_ARCH_LIST", "NVCC_APPEND_FLAGS")

    def key_extras(self) -> dict[str, str]:
        """Without ``TORCH_CUDA_ARCH_LIST``, torch targets the visible devices: key on their capabilities."""
        if os.environ.get("TORCH_CUDA_ARCH_LIST"):
            return {}
        import torch

        capabilities = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return {"capabilities": ",".join(f"{major}.{minor}" for major, minor in capabilities)}

    def compatibility(self) -> Compatibility:
        """Needs a CUDA build of torch (not ROCm) and nvcc, on top of the C++ toolchain."""
        verdict = super().compatibility()
        if not verdict:
            return verdict
        import torch

        if torch.version.cuda is None or getattr(torch.version, "hip", None):
            return Compatibility(False, f"torch {torch.__version__} is not a CUDA build")
        from torch.utils.cpp_extension import CUDA_HOME

        nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else shutil.which("nvcc")
        if not nvcc or not os.path.exists(nvcc):
            return Compatibility(False, "nvcc was not found (set CUDA_HOME to the CUDA toolkit)")
        return Compatibility(True, f"{verdict.reason}; nvcc at {nvcc}, torch built for CUDA {torch.version.cuda}")
