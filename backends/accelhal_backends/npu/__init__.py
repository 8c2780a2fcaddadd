"""The npu backend: Huawei Ascend NPUs through ``torch_npu`` (which registers ``torch.npu``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.spec import BackendSpec

SPEC = BackendSpec.for_device_module(
    "npu",
    priority=800,
    package="torch_npu",
    accelerator="accelhal_backends.npu.accelerator:NpuAccelerator",
    comm_backend="hccl",
    visible_devices_envs=("ASCEND_RT_VISIBLE_DEVICES",),
    export_envs=("ASCEND", "HCCL", "LD_LIBRARY", "PATH"),
    hint="install the CANN toolkit and source its set_env.sh (e.g. source /usr/local/Ascend/ascend-toolkit/"
    "set_env.sh) so that torch_npu finds libhccl.so and the other Ascend libraries",
    device_check_command="npu-smi info",
    description="Huawei Ascend NPUs through torch_npu; HCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
