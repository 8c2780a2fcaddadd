"""A third-party accelhal plugin with its own name ("acme") for the test device's device type.

It stands for a vendor that ships an accelhal plugin: the generic backend must stand aside for it.
"""

from __future__ import annotations

import os

from accelhal import BackendSpec, Verdict
from accelhal.discovery.hooks import backends_hook


def probe() -> Verdict:
    """Always available (the test device is loaded by ``import torch``)."""
    return Verdict.available("the acme runtime sees the test device")


SPEC = BackendSpec(
    name="acme",
    device_type=os.environ.get("ACCELHAL_TESTDEV_NAME", "testdev"),
    priority=250,
    accelerator="tests.privateuse1.named_plugin_accelerator:AcmeAccelerator",
    probe=probe,
    requires=("torch",),
    comm_backend="",  # the test device registers no torch.distributed backend (its class says the same)
    description="a named plugin for the test device",
)

accelhal_register_backends = backends_hook(SPEC)
