"""The npu backend: Huawei Ascend NPUs through ``torch_npu`` (which registers ``torch.npu``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

HINT = (
    "install the CANN toolkit and source its set_env.sh (e.g. source /usr/local/Ascend/ascend-toolkit/set_env.sh) "
    "so that torch_npu finds libhccl.so and the other Ascend libraries"
)

SPEC = BackendSpec(
    name="npu",
    device_type="npu",
    priority=800,
    accelerator="accelhal_backends.npu.accelerator:NpuAccelerator",
    probe=device_module_probe("torch_npu", "torch.npu", hint=HINT),
    requires=("torch", "torch_npu"),
    comm_backend="hccl",
    visible_devices_envs=("ASCEND_RT_VISIBLE_DEVICES",),
    hint=HINT,
    device_check_command="npu-smi info",
    description="Huawei Ascend NPUs through torch_npu; HCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
