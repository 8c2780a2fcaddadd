"""The hpu backend: Intel Gaudi through ``habana_frameworks.torch.hpu``.

Probing and selecting it has no process-wide side effects: no environment variable is
written and deterministic algorithms are not switched on (DeepSpeed's backend did both).
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

HINT = "install the Intel Gaudi software stack (habana-torch-plugin) that matches this torch"

SPEC = BackendSpec(
    name="hpu",
    device_type="hpu",
    priority=500,
    accelerator="accelhal_backends.hpu.accelerator:HpuAccelerator",
    probe=device_module_probe("habana_frameworks.torch.hpu", "habana_frameworks.torch.hpu", hint=HINT),
    requires=("torch", "habana_frameworks"),
    comm_backend="hccl",
    visible_devices_envs=("HABANA_VISIBLE_MODULES",),
    hint=HINT,
    device_check_command="hl-smi",
    description="Intel Gaudi through habana_frameworks.torch.hpu; HCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
