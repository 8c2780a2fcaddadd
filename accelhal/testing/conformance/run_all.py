"""The concrete suite that :func:`accelhal.testing.run_suite` collects (the backend comes from the command line)."""

from __future__ import annotations

from accelhal.testing.conformance import ConformanceSuite


class TestConformance(ConformanceSuite):
    """Every conformance group on the backend given by ``--accelhal-backend`` (else the selected one)."""
