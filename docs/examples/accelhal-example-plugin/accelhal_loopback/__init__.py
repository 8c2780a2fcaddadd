"""The loopback backend's registration: imported while plugins are discovered, so torch-free and cheap.

The accelerator class is named by a lazy ``"module:Class"`` reference: accelhal imports
:mod:`accelhal_loopback.accelerator` (and with it torch) only when this backend is chosen.
"""

from __future__ import annotations

from collections.abc import Callable

from accelhal import BackendSpec, Verdict, hookimpl


def probe() -> Verdict:
    """Whether the loopback device can be used: always, once torch is installed (``requires`` checks that).

    A real probe counts devices without creating a device context (see docs/plugins.md).
    """
    return Verdict.available("the loopback device is the host CPU")


SPEC = BackendSpec(
    name="loopback",
    device_type="cpu",
    priority=90,  # below cpu (100): never chosen by the cascade, only by name
    accelerator="accelhal_loopback.accelerator:LoopbackAccelerator",
    probe=probe,
    requires=("torch",),
    comm_backend="gloo",
    description="the host CPU under another name (accelhal's example plugin)",
)


@hookimpl
def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the loopback backend."""
    register(SPEC)
