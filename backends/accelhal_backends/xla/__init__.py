"""The xla backend: XLA devices through ``torch_xla`` (Google TPUs; XLA's CPU client; PJRT plugins).

The probe (:mod:`.detection`) takes an XLA device only where one is chosen: ``PJRT_DEVICE``
set, or a TPU attached as torch_xla detects it. With ``PJRT_DEVICE`` unset on a machine
without a TPU the verdict is ``no-device`` and nothing is imported, so torch_xla installed
beside CUDA or on a plain host changes no selection. It never starts torch_xla's runtime.
Priority 200, the only built-in below cuda (``docs/reference/priorities.md`` says why).
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec
from accelhal_backends.xla.detection import INSTALL_HINT, probe

SPEC = BackendSpec(
    name="xla",
    device_type="xla",
    priority=200,
    accelerator="accelhal_backends.xla.accelerator:XlaAccelerator",
    probe=probe,
    requires=("torch", "torch_xla"),
    comm_backend="xla",
    compile_backend="openxla",
    visible_devices_envs=("TPU_VISIBLE_CHIPS",),
    export_envs=("PJRT", "XLA", "TPU", "LIBTPU", "CPU_NUM_DEVICES"),
    hint=INSTALL_HINT,
    device_check_command="tpu-info",
    description="XLA devices through torch_xla's PJRT runtime (TPUs, XLA's CPU client); xla collectives",
)

accelhal_register_backends = backends_hook(SPEC)
