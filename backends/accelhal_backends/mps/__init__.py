"""The mps backend: Apple-silicon GPUs through ``torch.mps`` (Metal Performance Shaders)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "mps",
    priority=600,
    accelerator="accelhal_backends.mps.accelerator:MpsAccelerator",
    hint="MPS needs macOS 12.3+ on Apple silicon (or an AMD GPU) and a macOS build of torch",
    device_check_command="system_profiler SPDisplaysDataType",
    description="Apple-silicon GPUs through torch.mps; gloo collectives",
)

accelhal_register_backends = backends_hook(SPEC)
