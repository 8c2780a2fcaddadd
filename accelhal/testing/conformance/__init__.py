"""The conformance suite: base test classes that prove a backend honours the accelhal contract.

A backend author subclasses :class:`ConformanceSuite` in their own tests, with one line::

    from accelhal.testing.conformance import ConformanceSuite

    class TestMyBackend(ConformanceSuite):
        backend = "mydev"

and runs ``pytest`` (or ``pytest --accelhal-backend=mydev`` with ``backend`` left unset). The
groups follow the contract and can be subclassed one by one (``class TestRng(RngTests)``):

==========================  ==========================================================
:class:`IdentityTests`      members present with the contract's signatures, contract version
:class:`DeviceTests`        device indices, names, ``torch.device`` objects, ``set_device``
:class:`RngTests`           state round trip, seeding reproduces
:class:`StreamTests`        ``stream()`` context, streams, events, event timing
:class:`MemoryTests`        int figures, figures move with allocations
:class:`DtypeTests`         each claimed dtype round-trips a tensor
:class:`GraphTests`         capture + replay give the eager result, or the documented no-op
:class:`PinningTests`       pinned host buffers
:class:`EnvironmentTests`   visible-devices and export variables, the comm backend
:class:`CompileTests`       ``get_compile_backend`` names a backend, ``compile_backend_choice`` says why
:class:`OpBuilderTests`     unknown op builders give ``NotImplementedBuilder``
:class:`ProcessTests`       the probe creates no device context; detection then fork works
==========================  ==========================================================

A capability the backend declares absent is skipped with the reason; so is every test that
needs a tensor on a device that cannot hold one here (a simulated runtime).
"""

from __future__ import annotations

from accelhal.testing.conformance.base import SuiteBase
from accelhal.testing.conformance.compile import CompileTests
from accelhal.testing.conformance.devices import DeviceTests
from accelhal.testing.conformance.dtypes import DtypeTests
from accelhal.testing.conformance.environment import EnvironmentTests
from accelhal.testing.conformance.graphs import GraphTests
from accelhal.testing.conformance.identity import IdentityTests
from accelhal.testing.conformance.memory import MemoryTests
from accelhal.testing.conformance.ops import OpBuilderTests
from accelhal.testing.conformance.pinning import PinningTests
from accelhal.testing.conformance.processes import ProcessTests
from accelhal.testing.conformance.rng import RngTests
from accelhal.testing.conformance.streams import StreamTests

__all__ = [
    "CompileTests",
    "ConformanceSuite",
    "DeviceTests",
    "DtypeTests",
    "EnvironmentTests",
    "GraphTests",
    "IdentityTests",
    "MemoryTests",
    "OpBuilderTests",
    "PinningTests",
    "ProcessTests",
    "RngTests",
    "StreamTests",
    "SuiteBase",
]


class ConformanceSuite(
    IdentityTests,
    DeviceTests,
    RngTests,
    StreamTests,
    MemoryTests,
    DtypeTests,
    GraphTests,
    PinningTests,
    EnvironmentTests,
    CompileTests,
    OpBuilderTests,
    ProcessTests,
):
    """Every conformance group; subclass it with ``backend = "name"`` (or use ``--accelhal-backend``)."""
