"""The acme backend's registration: cheap, no torch import; the class is named lazily."""

import os

from accelhal import BackendSpec, Verdict, hookimpl


def probe():
    if os.environ.get("ACME_DEVICES", "1") == "0":
        return Verdict.no_device("ACME_DEVICES=0: no acme device visible")
    return Verdict.available("1 acme device (simulated on the host CPU)")


SPEC = BackendSpec(
    name="acme",
    device_type="cpu",
    priority=950,
    accelerator="acme_accel.accelerator:AcmeAccelerator",
    probe=probe,
    visible_devices_envs=("ACME_VISIBLE_DEVICES",),
    description="acme test backend",
)


@hookimpl
def accelhal_register_backends(register):
    register(SPEC)
