"""The sdaa backend: Tecorigin SDAA accelerators through ``torch_sdaa`` (which registers ``torch.sdaa``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

HINT = "install torch_sdaa with the Tecorigin driver and runtime (TecoToolkit) and source its setvars.sh"

SPEC = BackendSpec(
    name="sdaa",
    device_type="sdaa",
    priority=700,
    accelerator="accelhal_backends.sdaa.accelerator:SdaaAccelerator",
    probe=device_module_probe("torch_sdaa", "torch.sdaa", hint=HINT),
    requires=("torch", "torch_sdaa"),
    comm_backend="tccl",
    visible_devices_envs=("SDAA_VISIBLE_DEVICES",),
    hint=HINT,
    device_check_command="teco-smi",
    description="Tecorigin SDAA accelerators through torch_sdaa; TCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
