"""The sdaa backend: Tecorigin SDAA accelerators through ``torch_sdaa`` (which registers ``torch.sdaa``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "sdaa",
    priority=700,
    package="torch_sdaa",
    comm_backend="tccl",
    visible_devices_envs=("SDAA_VISIBLE_DEVICES",),
    export_envs=("NCCL", "LD_LIBRARY", "PATH"),
    hint="install torch_sdaa with the Tecorigin driver and runtime (TecoToolkit) and source its setvars.sh",
    device_check_command="teco-smi",
    description="Tecorigin SDAA accelerators through torch_sdaa; TCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
