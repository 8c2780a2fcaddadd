"""The SGLang releases the bridge supports, and what differs between them.

:data:`SHAPES` records each shape of ``SRTPlatform`` from the first release that has it;
``tests/compat/sglang/test_releases.py`` checks the rows against the installed SGLang and
against the shapes recorded here from each supported release (``tests/data/sglang-shapes.json``).
"""

from __future__ import annotations

from accelhal.compat._releases import ReleaseRange, ShapeTable

SUPPORTED = ReleaseRange("sglang", "0.5.22", "0.5.23", "0.6")
"""SGLang 0.5.22 and 0.5.23 tested (both pin torch 2.14.1); 0.6 and later refused."""

SHAPES: ShapeTable[frozenset[str]] = ShapeTable(
    [
        (
            "0.5.22",
            frozenset(
                {"get_group_coordinator_device", "get_speculative_graph_runner_cls", "get_speculative_worker_cls"}
                | {"is_sail"}
            ),
        ),
        ("0.5.23", frozenset()),
    ]
)
"""Per first release, the ``SRTPlatform`` members the bridge's table (``MEMBERS``) names that the release lacks;
the bridge's class leaves them out."""
