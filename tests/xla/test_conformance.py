"""The conformance kit against the xla backend on XLA's CPU client, in this process."""

from __future__ import annotations

from accelhal.testing.conformance import ConformanceSuite
from tests.xla import require_torch_xla

require_torch_xla(cpu_client=True)


class TestXlaConformance(ConformanceSuite):
    """Every group; streams, events, graphs, pinning and torch.Generator are absent and skipped with the reason."""

    backend = "xla"
