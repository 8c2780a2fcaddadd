"""The xpu backend: Intel GPUs through stock torch's ``torch.xpu`` (IPEX is not needed)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "xpu",
    priority=900,
    accelerator="accelhal_backends.xpu.accelerator:XpuAccelerator",
    comm_backend="xccl",
    visible_devices_envs=("ZE_AFFINITY_MASK",),
    hint="install an XPU build of torch and Intel's GPU driver",
    device_check_command="xpu-smi discovery",
    description="Intel GPUs through torch.xpu; XCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
