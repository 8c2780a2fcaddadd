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

The workers tell the scheduler which test is in which group through a file the controller names
(:func:`tell_worker`): xdist's own ``loadgroup`` appends the group to each test's node id where
pytest 9 no longer reads it, so the groups were spread over the workers by module, and a test of
one waited in a child for the build that another worker was running.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

DIST = "loadgroup"
"""xdist's mode that tags each test with its ``xdist_group`` (``<nodeid>@<group>``), which the scheduler reads."""


DIST_INPUT = "accelhal_dist"
"""The key of xdist's ``workerinput`` that carries the controller's distribution to each worker."""
GROUPS_INPUT = "accelhal_groups"
"""The key of xdist's ``workerinput`` naming the file where the workers write each test's group."""
_GROUPS_FILE = pytest.StashKey[Path]()


def choose_distribution(config: pytest.Config) -> None:
    """With ``-n`` and no ``--dist``: this module's distribution, in the order the workers collect."""
    if hasattr(config, "workerinput"):
        return
    if config.getoption("numprocesses", None) and config.getoption("dist", "no") == "no":
        config.option.dist = DIST
        config.option.loadscopereorder = False  # keep the order of order_for_workers()


def tell_worker(node: Any) -> None:
    """Before an xdist worker starts (``pytest_configure_node``): the distribution, and where to write the groups.

    xdist sets a worker's options from the command line, where ``--dist`` is absent.
    """
    config: pytest.Config = node.config
    if _GROUPS_FILE not in config.stash:
        handle, name = tempfile.mkstemp(prefix="accelhal-xdist-groups-", suffix=".json")
        os.close(handle)
        config.stash[_GROUPS_FILE] = Path(name)
    node.workerinput[DIST_INPUT] = config.getoption("dist")
    node.workerinput[GROUPS_INPUT] = str(config.stash[_GROUPS_FILE])


def forget_groups(config: pytest.Config) -> None:
    """At the run's end: remove the file of :func:`tell_worker`."""
    groups_file = config.stash.get(_GROUPS_FILE, None)
    if groups_file is not None:
        groups_file.unlink(missing_ok=True)


def _group(item: pytest.Item) -> str | None:
    marks = item.iter_markers("xdist_group")
    groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")) for mark in marks})
    return "_".join(groups) if groups else None


def _unit(item: pytest.Item) -> str:
    return _group(item) or item.nodeid.split("::", 1)[0]


RECORDED_SECONDS = {
    "tests/privateuse1/test_vendor_backends.py": 46,
    "tests/cli/test_commands.py": 39,
    "tests/compat/test_accelerate.py": 38,
    "tests/compat/test_lightning.py": 38,
    "tests/cli/test_hangs.py": 37,
    "tests/privateuse1/test_frameworks.py": 32,
    "tests/test_conformance_simulated.py": 30,
    "tests/test_torch_import.py": 27,
    "tests/test_distributed_multinode.py": 25,
    "tests/cli/test_stop_signals.py": 24,
    "tests/privateuse1/test_accelerate.py": 21,
    "tests/privateuse1/test_generic_backend.py": 19,
    "tests/cli/test_first_run.py": 19,
    "tests/cli/test_plugin_promises.py": 17,
    "tests/test_distributed_torchrun.py": 15,
    "tests/test_distributed_launch_env.py": 14,
    "tests/cli/test_terminal.py": 14,
    "tests/cli/test_doctor_faults.py": 14,
    "tests/cli/test_exit_codes.py": 13,
    "tests/cli/test_runtime_faults.py": 13,
    "tests/test_identity_edges.py": 11,
    "tests/cli/test_check.py": 11,
    "tests/test_conformance.py": 10,
    "tests/test_entry_points.py": 10,
    "tests/cli/test_explain.py": 10,
    "tests/test_cli_transcript.py": 10,
}
"""CPU seconds of each unit without a ``slow`` test (10 s or more): its worker's and every process it started
(a cgroup per worker), ``-n auto`` on two cores, 2026-11-28, on a machine busy with other work.

Only the order reads them: a unit missing here (or renamed) goes after these, in collection order; a figure
that has drifted costs at most a less even finish."""


def _order_key(unit: str, slow: set[str]) -> tuple[bool, int]:
    return (False, 0) if unit in slow else (True, -RECORDED_SECONDS.get(unit, 0))


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, put the units that hold a ``slow`` test first, then the longest (each worker sorts alike).

    Under this module's distribution, also write each grouped test's group for the scheduler (every
    worker writes the same).
    """
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    slow = {_unit(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _order_key(_unit(item), slow))  # stable: collection order among equals
    if workerinput.get(DIST_INPUT) == DIST and workerinput.get(GROUPS_INPUT):
        path = Path(workerinput[GROUPS_INPUT])
        written = path.with_name(f"{path.name}.{os.getpid()}")
        written.write_text(json.dumps({item.nodeid: group for item in items if (group := _group(item))}))
        os.replace(written, path)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The scheduler of :func:`choose_distribution`'s mode; ``None`` (xdist's own) for any other mode."""
    if config.getoption("dist") != DIST or config.getoption("loadscopereorder"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    groups_file = config.stash.get(_GROUPS_FILE, None)

    class ModuleScheduling(LoadScopeScheduling):
        """xdist's scope scheduling whose scope is the ``xdist_group`` when there is one, else the module."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first asked once every worker has collected, and so written the groups
                text = groups_file.read_text() if groups_file is not None else ""
                self.groups = json.loads(text) if text else {}
            if nodeid.rfind("@") > nodeid.rfind("]"):  # tagged by xdist itself (pytest 8)
                return nodeid.rsplit("@", 1)[1]
            return self.groups.get(nodeid) or nodeid.split("::", 1)[0]

    return ModuleScheduling(config, log)
