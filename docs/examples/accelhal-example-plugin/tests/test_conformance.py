"""The accelhal conformance suite, run on the backend given by ``pytest --accelhal-backend=loopback``."""

from accelhal.testing.conformance import ConformanceSuite


class TestLoopbackConformance(ConformanceSuite):
    """Every conformance group (set ``backend = "loopback"`` here to drop the command-line option)."""
