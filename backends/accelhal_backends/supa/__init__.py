"""The supa backend: Biren GPUs through ``torch_supa`` (which registers ``torch.supa``).

Priority 350, above cuda: torch_supa also makes ``torch.cuda`` answer for its devices (its
``transfer_to_supa`` runs from torch's device-backend autoload), so a Biren machine looks like
a CUDA one to anything that asks ``torch.cuda`` first. The cuda probe reports that case as
``replaced`` and names this backend.
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "supa",
    priority=350,
    package="torch_supa",
    comm_backend="bccl",
    visible_devices_envs=("SUPA_VISIBLE_DEVICES",),
    export_envs=("BCCL", "BIREN", "SUPA", "LD_LIBRARY", "PATH"),
    hint="install torch_supa from Biren's birensupa-sdk and source its brsw_set_env.sh "
    "(/usr/local/birensupa/sdk/latest/scripts/brsw_set_env.sh) so that libsupa.so and libtorch_supa.so are "
    "found",
    device_check_command="brsmi",
    description="Biren GPUs (SUPA) through torch_supa; BCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
