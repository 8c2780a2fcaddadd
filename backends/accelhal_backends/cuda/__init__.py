"""The cuda backend: NVIDIA GPUs, and AMD GPUs through ROCm builds of torch (reported as HIP).

Probed by ``torch.cuda.device_count()``, which asks NVML (amdsmi on ROCm) and creates no
CUDA context: after detection ``torch.cuda.is_initialized()`` is still False and a forked
child can use the GPU.
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

HINT = "install a CUDA (or ROCm) build of torch and the NVIDIA (or AMD) driver"

SPEC = BackendSpec(
    name="cuda",
    device_type="cuda",
    priority=300,
    accelerator="accelhal_backends.cuda.accelerator:CudaAccelerator",
    probe=device_module_probe("torch", "torch.cuda", hint=HINT),
    requires=("torch",),
    comm_backend="nccl",
    visible_devices_envs=("CUDA_VISIBLE_DEVICES",),
    hint=HINT,
    device_check_command="nvidia-smi",
    description="NVIDIA GPUs (CUDA) and AMD GPUs (ROCm/HIP) through torch.cuda; NCCL/RCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
