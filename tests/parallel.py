"""How the suite is spread over pytest-xdist workers (``python -m pytest -n auto``).

A unit of work goes to one worker whole: a test module, so that its module- and
class-scoped fixtures run once; or, across modules, every test marked
``pytest.mark.xdist_group(name)`` (tests that use an artefact the first of them builds, and
that should not wait for another worker building it). Units that hold a ``slow`` test are
handed out first, in collection order; then the others, the longest first by
:data:`RECORDED_SECONDS` and the rest in collection order; one at a time to whichever worker
is free: the long ones start early and the short ones fill the gaps at the end, so that no
worker is left idle while another runs a long unit that came last.

``tests/conftest.py`` wires this in: ``-n`` without ``--dist`` distributes this way; an
explicit ``--dist`` is honoured as given (every test is safe under any distribution, this
one only avoids repeated and waiting work).
"""

from __future__ import annotations

from typing import Any

import pytest

DIST = "loadgroup"
"""xdist's mode that tags each test with its ``xdist_group`` (``<nodeid>@<group>``), which the scheduler reads."""


def choose_distribution(config: pytest.Config) -> None:
    """With ``-n`` and no ``--dist``: this module's distribution, in the order the workers collect."""
    if config.getoption("numprocesses", None) and config.getoption("dist", "no") == "no":
        config.option.dist = DIST
        config.option.loadscopereorder = False  # keep the order of order_for_workers()


def _unit(item: pytest.Item) -> str:
    marks = item.iter_markers("xdist_group")
    groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")) for mark in marks})
    return "_".join(groups) if groups else item.nodeid.split("::", 1)[0]


RECORDED_SECONDS = {
    "tests/cli/test_commands.py": 42,
    "tests/test_conformance_simulated.py": 34,
    "tests/test_distributed_multinode.py": 33,
    "tests/test_torch_import.py": 31,
    "tests/privateuse1/test_vendor_backends.py": 27,
    "tests/compat/test_lightning.py": 26,
    "tests/cli/test_check.py": 25,
    "tests/cli/test_first_run.py": 21,
    "tests/cli/test_doctor_faults.py": 19,
    "tests/privateuse1/test_generic_backend.py": 19,
    "tests/cli/test_terminal.py": 17,
    "tests/privateuse1/test_frameworks.py": 16,
    "tests/test_plugin_deferral.py": 14,
    "tests/test_distributed_launch_env.py": 13,
    "tests/test_identity_edges.py": 12,
    "tests/privateuse1/test_accelerate.py": 12,
    "tests/cli/test_exit_codes.py": 11,
    "tests/test_entry_points.py": 11,
    "tests/test_distributed_torchrun.py": 11,
    # estimated from a --durations run of 2026-11-27 in a clean clone (each file's warm forks and children)
    "tests/cli/test_runtime_faults.py": 15,
    "tests/test_cli_transcript.py": 11,
    "tests/cli/test_pipes.py": 10,
    "tests/compat/test_accelerate_releases.py": 10,
    "tests/test_isolated_without_numpy.py": 7,
}
"""Seconds each unit without a ``slow`` test took (10 s or more), on two cores with ``-n auto`` (2026-11-26, pip's
cache off, as ``.ci/run`` runs it).

Only the order reads them: a unit missing here (or renamed) goes after these, in collection order; a figure
that has drifted costs at most a less even finish."""


def _order_key(unit: str, slow: set[str]) -> tuple[bool, int]:
    return (False, 0) if unit in slow else (True, -RECORDED_SECONDS.get(unit, 0))


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, put the units that hold a ``slow`` test first, then the longest (each worker sorts alike)."""
    if not hasattr(config, "workerinput"):
        return
    slow = {_unit(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _order_key(_unit(item), slow))  # stable: collection order among equals


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The scheduler of :func:`choose_distribution`'s mode; ``None`` (xdist's own) for any other mode."""
    if config.getoption("dist") != DIST or config.getoption("loadscopereorder"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        """xdist's scope scheduling whose scope is the ``xdist_group`` when there is one, else the module."""

        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):
                return nodeid.rsplit("@", 1)[1]
            return nodeid.split("::", 1)[0]

    return ModuleScheduling(config, log)
