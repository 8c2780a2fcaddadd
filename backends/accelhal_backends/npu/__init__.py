"""The npu backend: Huawei Ascend NPUs through ``torch_npu`` (which registers ``torch.npu``)."""

from __future__ import annotations

from accelhal.hookspecs import backends_hook
from accelhal.probing import device_module_probe
from accelhal.spec import BackendSpec

SPEC = BackendSpec(
    name="npu",
    device_type="npu",
    priority=800,
    accelerator="accelhal_backends.npu.accelerator:NpuAccelerator",
    probe=device_module_probe(
        "torch_npu",
        "torch.npu",
        hint="source the CANN toolkit's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) so that "
        "torch_npu finds libhccl.so and the other Ascend libraries; check the devices with npu-smi info",
    ),
    requires=("torch", "torch_npu"),
    comm_backend="hccl",
    visible_devices_envs=("ASCEND_RT_VISIBLE_DEVICES",),
    description="Huawei Ascend NPUs through torch_npu; HCCL collectives",
)

accelhal_register_backends = backends_hook(SPEC)
