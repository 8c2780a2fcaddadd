"""The hpu backend: Intel Gaudi through ``habana_frameworks.torch.hpu``.

``torch.compile`` takes Gaudi's own backend, ``hpu_backend`` (Inductor generates no code for
Gaudi), which the Gaudi software stack registers with ``torch._dynamo``.

Probing and selecting it has no process-wide side effects: no environment variable is
written and deterministic algorithms are not switched on (DeepSpeed's backend did both).
"""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "hpu",
    priority=500,
    package="habana_frameworks.torch.hpu",
    accelerator="accelhal_backends.hpu.accelerator:HpuAccelerator",
    comm_backend="hccl",
    visible_devices_envs=("HABANA_VISIBLE_MODULES",),
    hint="install the Intel Gaudi software stack (habana-torch-plugin) that matches this torch",
    device_check_command="hl-smi",
    description="Intel Gaudi through habana_frameworks.torch.hpu; HCCL collectives",
    compile_backend="hpu_backend",
)

accelhal_register_backends = backends_hook(SPEC)
