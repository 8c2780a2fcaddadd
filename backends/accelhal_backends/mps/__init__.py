"""The mps backend: Apple-silicon GPUs through ``torch.mps`` (Metal Performance Shaders)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

HINT = "MPS needs macOS 12.3+ on Apple silicon (or an AMD GPU) and a macOS build of torch"

SPEC = BackendSpec(
    name="mps",
    device_type="mps",
    priority=600,
    accelerator="accelhal_backends.mps.accelerator:MpsAccelerator",
    probe=device_module_probe("torch", "torch.mps", hint=HINT),
    requires=("torch",),
    comm_backend="gloo",
    hint=HINT,
    device_check_command="system_profiler SPDisplaysDataType",
    description="Apple-silicon GPUs through torch.mps; gloo collectives",
)

accelhal_register_backends = backends_hook(SPEC)
