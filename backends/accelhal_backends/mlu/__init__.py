"""The mlu backend: Cambricon MLUs through ``torch_mlu`` (which registers ``torch.mlu``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "mlu",
    priority=400,
    package="torch_mlu",
    accelerator="accelhal_backends.mlu.accelerator:MluAccelerator",
    comm_backend="cncl",
    visible_devices_envs=("MLU_VISIBLE_DEVICES",),
    export_envs=("NEUWARE_HOME", "CNCL", "LD_LIBRARY", "PATH"),
    hint="install torch_mlu and set NEUWARE_HOME and LD_LIBRARY_PATH to the Cambricon Neuware SDK",
    device_check_command="cnmon",
    description="Cambricon MLUs through torch_mlu; CNCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
