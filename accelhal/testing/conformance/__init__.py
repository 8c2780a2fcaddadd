"""Prove that a backend honours the accelhal contract: the conformance suite's test classes.

A backend author subclasses :class:`ConformanceSuite` with ``backend = "mydev"`` (or runs
``pytest --accelhal-backend=mydev``); each group (:class:`IdentityTests`, :class:`RngTests`, ...)
can be subclassed alone. What each group proves is tabled in ``docs/plugins.md``.
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
    """Every conformance group; subclass it with ``backend = "name"`` (or use ``--accelhal-backend``).

    A capability the backend declares absent is skipped with the reason; so is every test that
    needs a tensor on a device that cannot hold one here (a simulated runtime)::

        from accelhal.testing.conformance import ConformanceSuite

        class TestMyBackend(ConformanceSuite):
            backend = "mydev"
    """
