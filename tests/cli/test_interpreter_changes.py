"""A plugin that changes the interpreter under everyone else is named, and what it changed does not outlive it.

A plugin that lowers Python's recursion limit at import (``sys.setrecursionlimit(100)``) breaks the
code after it: torch's import fails with ``RecursionError``, and the first ``get_accelerator()`` of a
program blamed torch ("torch itself cannot load ... run 'accelhal doctor'") while ``doctor`` found
nothing. accelhal puts the limit back, does not load the plugin, and names it with what it did.
A plugin that starts a thread that is not a daemon keeps every program that imports it alive after
its last line; ``doctor`` names the plugin and the thread.
"""

from __future__ import annotations

import pytest

from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

LOWERS = backend_plugin("acmerec", priority=10) + "\nimport sys\nsys.setrecursionlimit(100)\n"
FIRST = "import sys\nsys.setrecursionlimit(100)\n" + backend_plugin("acmerec", priority=10)
"""It lowers the limit before its own imports: torch's import fails inside the plugin's."""
SAID = "lowers Python's recursion limit from 1000 to 100 (sys.setrecursionlimit)"

PROGRAM = """
import sys
import accelhal
print(accelhal.get_accelerator().name, sys.getrecursionlimit())
import torch._dynamo  # deep imports still work
"""


@pytest.fixture
def lowering(install_distribution: InstallDistribution) -> dict[str, str]:
    site = install_distribution("acme-rec", {"acme_rec": LOWERS}, {"acmerec": "acme_rec"}).parent
    return {"PYTHONPATH": str(site)}


def test_a_program_runs_and_keeps_its_recursion_limit(lowering: dict[str, str]) -> None:
    result = run_accelhal(code=PROGRAM, env=lowering)
    assert result.returncode == 0, result.output
    assert result.stdout.split() == ["cpu", "1000"]


@pytest.mark.parametrize("when", ["after-its-imports", "before-its-imports"])
@pytest.mark.parametrize("command", ["info", "doctor"])
def test_every_command_names_the_plugin_and_what_it_did(
    install_distribution: InstallDistribution, command: str, when: str
) -> None:
    source = LOWERS if when == "after-its-imports" else FIRST
    site = install_distribution("acme-rec", {"acme_rec": source}, {"acmerec": "acme_rec"}).parent
    result = run_accelhal(command, env={"PYTHONPATH": str(site)})
    text = " ".join(result.output.split())
    assert "plugin 'acmerec' cannot be imported" in text and SAID in text, result.output
    assert "torch cannot load" not in text and "torch itself" not in text


def test_a_probe_that_lowers_the_limit_gets_a_verdict_saying_so(install_distribution: InstallDistribution) -> None:
    source = backend_plugin("acmerec", priority=10, probe_body="import sys; sys.setrecursionlimit(100); return None")
    site = install_distribution("acme-rec", {"acme_rec": source}, {"acmerec": "acme_rec"}).parent
    code = "import sys, accelhal\nprint(accelhal.detect().candidate('acmerec').reason, sys.getrecursionlimit())\n"
    result = run_accelhal(code=code, env={"PYTHONPATH": str(site)})
    assert result.returncode == 0, result.output
    assert result.stdout.startswith(f"the probe {SAID}") and result.stdout.split()[-1] == "1000", result.stdout


def test_a_program_whose_torch_the_plugin_broke_is_sent_to_doctor_which_names_it(
    install_distribution: InstallDistribution,
) -> None:
    """torch's import failed inside the plugin's: the program cannot go on, and its error names the plugin."""
    site = install_distribution("acme-rec", {"acme_rec": FIRST}, {"acmerec": "acme_rec"}).parent
    result = run_accelhal(code=PROGRAM, env={"PYTHONPATH": str(site)})
    assert result.returncode == 1
    assert "plugin(s) acmerec failed to load" in result.stderr and "accelhal doctor" in result.stderr


THREAD = """
import threading
import time


def _poll():
    while True:
        time.sleep(0.5)


threading.Thread(target=_poll, name="acme-poller", daemon={daemon}).start()
"""


@pytest.mark.parametrize("daemon", [False, True], ids=["non-daemon", "daemon"])
def test_doctor_names_a_plugins_thread_that_keeps_programs_alive(
    install_distribution: InstallDistribution, daemon: bool
) -> None:
    source = THREAD.format(daemon=daemon) + backend_plugin("acmethr", priority=10)
    site = install_distribution("acme-thr", {"acme_thr": source}, {"acmethr": "acme_thr"}).parent
    result = run_accelhal("doctor", "--json", env={"PYTHONPATH": str(site)}).json()
    found = [p for p in result["problems"] if p["code"] == "plugin-thread"]
    if daemon:  # a daemon thread ends with the program: nothing to say
        assert found == [], found
        return
    (problem,) = found
    assert problem["severity"] == "warning"
    assert problem["title"] == "plugin 'acmethr' leaves thread 'acme-poller' running, which keeps programs alive"
    assert "acme_thr.py" in problem["detail"] and "_poll" in problem["detail"]
    assert "daemon=True" in problem["fix"] and "ACCELHAL_BLOCK_PLUGINS=acmethr" in problem["fix"]


def test_doctor_names_a_thread_running_no_plugin_code_and_the_plugins_to_suspect(
    install_distribution: InstallDistribution,
) -> None:
    """A thread started on a function of Python's (time.sleep): no plugin code to name it by; the suspects are."""
    source = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), name='acme-sleeper').start()\n"
    source += backend_plugin("acmethr", priority=10)
    site = install_distribution("acme-thr", {"acme_thr": source}, {"acmethr": "acme_thr"}).parent
    result = run_accelhal("doctor", "--json", env={"PYTHONPATH": str(site)}).json()
    (problem,) = [p for p in result["problems"] if p["code"] == "plugin-thread"]
    assert problem["title"] == "a plugin leaves thread 'acme-sleeper' running, which keeps programs alive"
    assert "sleep" in problem["detail"] and "the third-party plugins loaded: acmethr" in problem["detail"]


CLOSES = backend_plugin(
    "acmefds", priority=10, probe_body="import os; os.closerange(3, 65536); return Verdict.no_device('x')"
)
"""A probe that closes every descriptor it did not open (accelhal's copy of stdout and its pipes among them)."""


def test_a_probe_that_closes_descriptors_gets_a_verdict_not_a_traceback(
    install_distribution: InstallDistribution,
) -> None:
    """In a program the probe's verdict says what it did; stdout, whose copy it closed, goes on (to stderr).
    In the command, one error line names the probe, whose closing of the worker's pipes ended it."""
    site = install_distribution("acme-fds", {"acme_fds": CLOSES}, {"acmefds": "acme_fds"}).parent
    code = "import accelhal\nprint(accelhal.get_accelerator().name)\nprint(accelhal.detect().candidate('acmefds'))\n"
    program = run_accelhal(code=code, env={"PYTHONPATH": str(site)})
    assert "Traceback" not in program.output, program.output
    assert program.returncode == 0, program.output
    assert "status=<Status.PROBE_ERROR: 'probe-error'>" in program.output
    assert "the probe closed file descriptors it did not open" in program.output

    for command in ("info", "list"):  # the command's worker lost its pipes: one line names the step that ended it
        result = run_accelhal(command, env={"PYTHONPATH": str(site)})
        assert result.returncode == 1 and "Traceback" not in result.output, result.output
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"accelhal: error: 'accelhal {command}' stopped: backend 'acmefds' (its probe)"), line
        assert "ACCELHAL_BLOCK_PLUGINS=acmefds" in line
