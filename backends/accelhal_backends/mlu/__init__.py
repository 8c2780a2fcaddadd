"""The mlu backend: Cambricon MLUs through ``torch_mlu`` (which registers ``torch.mlu``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

HINT = "set NEUWARE_HOME and LD_LIBRARY_PATH to the Cambricon Neuware SDK"

SPEC = BackendSpec(
    name="mlu",
    device_type="mlu",
    priority=400,
    accelerator="accelhal_backends.mlu.accelerator:MluAccelerator",
    probe=device_module_probe("torch_mlu", "torch.mlu", hint=HINT),
    requires=("torch", "torch_mlu"),
    comm_backend="cncl",
    visible_devices_envs=("MLU_VISIBLE_DEVICES",),
    hint=HINT,
    device_check_command="cnmon",
    description="Cambricon MLUs through torch_mlu; CNCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
