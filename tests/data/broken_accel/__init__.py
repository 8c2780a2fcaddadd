"""A deliberately broken backend ("broken") that the conformance suite must reject, member by member.

Its registration is honest and its class passes ``contract_problems``; the faults show only
when the members are used. The probe creates a "device context" (``runtime.is_initialized()``
turns True), which the suite observes through the accelerator's ``module``.
"""

from __future__ import annotations

from collections.abc import Callable

from accelhal import BackendSpec, Verdict, hookimpl
from broken_accel import runtime


def probe() -> Verdict:
    """A probe that wrongly initialises the runtime."""
    runtime.init()
    return Verdict.available("1 broken device")


@hookimpl
def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="broken",
            device_type="cpu",
            priority=50,
            accelerator="broken_accel.accelerator:BrokenAccelerator",
            probe=probe,
            requires=("torch",),
        )
    )
