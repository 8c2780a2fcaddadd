"""The musa backend: Moore Threads GPUs through ``torch_musa`` (which is ``torch.musa``).

Priority 340, above cuda: Moore Threads' torchada makes ``torch.cuda`` answer for MUSA
devices, so on a MUSA machine ``torch.cuda`` may look populated; the cuda probe reports that
case as ``replaced`` and names this backend. torch_musa sets ``torch.musa`` to itself without
registering a ``torch.musa`` module, so the package is imported as the device module.
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

SPEC = BackendSpec(
    name="musa",
    device_type="musa",
    priority=340,
    accelerator="accelhal_backends.musa.accelerator:MusaAccelerator",
    probe=device_module_probe(
        "torch_musa",
        "torch_musa",
        hint="install torch_musa matching this torch and the MUSA toolkit (MUSA_HOME, LD_LIBRARY_PATH); "
        "check the devices with mthreads-gmi",
    ),
    requires=("torch", "torch_musa"),
    comm_backend="mccl",
    visible_devices_envs=("MUSA_VISIBLE_DEVICES",),
    description="Moore Threads GPUs (MUSA) through torch_musa; MCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
