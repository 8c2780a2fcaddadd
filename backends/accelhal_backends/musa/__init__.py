"""The musa backend: Moore Threads GPUs through ``torch_musa`` (which is ``torch.musa``).

Priority 340, above cuda: Moore Threads' torchada makes ``torch.cuda`` answer for MUSA
devices, so on a MUSA machine ``torch.cuda`` may look populated; the cuda probe reports that
case as ``replaced`` and names this backend. torch_musa sets ``torch.musa`` to itself without
registering a ``torch.musa`` module, so the package is imported as the device module.
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

PACKAGE = "torch_musa"
"""The vendor package, which is also the device module (``torch.musa`` is the package itself)."""

SPEC = BackendSpec.for_device_module(
    "musa",
    priority=340,
    package=PACKAGE,
    module=PACKAGE,
    comm_backend="mccl",
    visible_devices_envs=("MUSA_VISIBLE_DEVICES",),
    export_envs=("MUSA", "MCCL", "LD_LIBRARY", "PATH"),
    hint="install torch_musa matching this torch and the MUSA toolkit (MUSA_HOME, LD_LIBRARY_PATH)",
    device_check_command="mthreads-gmi",
    description="Moore Threads GPUs (MUSA) through torch_musa; MCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
