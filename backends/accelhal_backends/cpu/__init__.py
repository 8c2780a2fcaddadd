"""The cpu backend: the host processor, always available, the fallback of the cascade."""

from __future__ import annotations

from collections.abc import Callable

from accelhal.hookspecs import hookimpl
from accelhal.spec import BackendSpec, Verdict


def probe() -> Verdict:
    """The host CPU is always usable once torch is installed (``requires`` checks that)."""
    return Verdict.available("the host CPU is always available")


SPEC = BackendSpec(
    name="cpu",
    device_type="cpu",
    priority=100,
    accelerator="accelhal_backends.cpu.accelerator:CpuAccelerator",
    probe=probe,
    requires=("torch",),
    comm_backend="gloo",
    description="the host CPU (torch's CPU tensors, gloo collectives)",
)


@hookimpl
def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the cpu backend."""
    register(SPEC)
