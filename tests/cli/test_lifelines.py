"""What a plugin starts is not the command's lifeline: it ends with the command, and never holds the command up.

The backend ``acmeleaver`` (priority 950) leaves processes behind from its probe, as vendor
runtimes do: a ``fork()`` it never waits for, a daemon (a double fork into a session of its
own, keeping the inherited descriptors) and a ``multiprocessing`` helper; each writes its pid
to ``ACME_LEFT``. Each command ends as soon as its own work is done (the leftovers sleep for
ten minutes, holding every descriptor they inherited), and once it has ended, or has been
killed (``SIGTERM`` to its group as a scheduler sends it, ``SIGKILL`` to the command alone),
none of them is left. The commands are started as a shell starts a job (the ``launcher``
fixture, :mod:`tests.cli.launch`).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from tests.cli.launch import Launcher, tree, wait_for
from tests.distributions import lay_out
from tests.plugin_sources import backend_plugin

pytestmark = pytest.mark.slow  # processes of their own for seconds each

LEAVING = """
import multiprocessing
import os
import time

def _record():
    with open(os.environ["ACME_LEFT"], "a") as left:
        left.write(f"{os.getpid()}\\n")

def _linger():
    _record()
    time.sleep(600)
    os._exit(0)

def _leave():
    if os.fork() == 0:  # a child nobody waits for
        _linger()
    middle = os.fork()
    if middle == 0:  # a daemon: a session of its own, re-parented once the middle process ends
        os.setsid()
        if os.fork() == 0:
            _linger()
        os._exit(0)
    os.waitpid(middle, 0)
    multiprocessing.get_context("fork").Process(target=_linger).start()  # a helper, never joined
    while len(open(os.environ["ACME_LEFT"]).read().split()) < 3:
        time.sleep(0.01)
    if os.environ.get("ACME_THEN") == "hang":
        open(os.environ["ACME_MARKER"], "a").close()
        while True:
            time.sleep(3600)
    return Verdict.available("acme: one device")
"""
LEAVER = backend_plugin("acmeleaver", priority=950, probe_body="return _leave()", module_prelude=LEAVING)
LEFT = 3
"""Processes the probe leaves, each time it runs."""
ENDS_WITHIN = 30.0
"""Seconds a command may take (about one on an idle machine); the leftovers sleep for 600."""
GRACE = 2.0
"""Seconds after the command's end by which nothing it started may be left."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> str:
    site = tmp_path_factory.mktemp("site") / "site-packages"
    lay_out(
        site, "acme-leaver", entry_points={"accelhal": {"acmeleaver": "acme_leaver"}}, files={"acme_leaver.py": LEAVER}
    )
    return str(site)


def _living(pids: list[int]) -> list[str]:
    """The processes among ``pids`` still alive (zombies are dead), as ``pid: command line``."""
    alive = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{pid}: {' '.join(process.cmdline())}")
        except psutil.NoSuchProcess:
            continue
    return alive


def _left_after(pids_file: Path, ended: float) -> list[str]:
    pids = [int(line) for line in pids_file.read_text().split()] if pids_file.exists() else []
    time.sleep(max(0.0, ended + GRACE - time.monotonic()))
    return _living(pids)


@pytest.mark.parametrize(
    "command", [("list",), ("info", "--json"), ("doctor", "--json")], ids=lambda command: " ".join(command)
)
def test_the_command_ends_with_its_own_work_and_leaves_nothing(
    launcher: Launcher, site: str, tmp_path: Path, command: tuple[str, ...]
) -> None:
    pids = tmp_path / "left"
    started = launcher.start(*command, "--timeout", "5", env={"PYTHONPATH": site, "ACME_LEFT": str(pids)})
    result = launcher.wait(started, timeout=ENDS_WITHIN)
    ended = time.monotonic()
    assert result.returncode == 0, result.output
    assert "acmeleaver" in result.stdout
    assert len(pids.read_text().split()) >= LEFT  # doctor probes twice: in its discovery child, then itself
    assert not _left_after(pids, ended), result.output


@pytest.mark.parametrize("how", ["SIGTERM to its group", "SIGKILL to the command"])
@pytest.mark.parametrize("command", ["list", "doctor"])
def test_a_killed_command_leaves_nothing(launcher: Launcher, site: str, tmp_path: Path, how: str, command: str) -> None:
    pids = tmp_path / "left"
    env = {"PYTHONPATH": site, "ACME_LEFT": str(pids), "ACME_THEN": "hang", "ACCELHAL_TIMEOUT": "600"}
    started = launcher.start(command, env={**env, "ACCELHAL_DOCTOR_TIMEOUT": "600"})
    wait_for(started.marker)
    assert len(tree(started.pid)) > 1
    if how.startswith("SIGTERM"):
        os.killpg(started.pid, signal.SIGTERM)
    else:
        os.kill(started.pid, signal.SIGKILL)
    launcher.wait(started, timeout=ENDS_WITHIN)
    assert not _left_after(pids, time.monotonic())


DESCRIBED_THEN_GONE = backend_plugin(
    "acmegone",
    priority=950,
    module_prelude=LEAVING.replace("return Verdict", "return None  # not a probe here; was: Verdict"),
    class_body="def device_name(self, device_index=None):\n        _leave()\n        os._exit(3)",
)
"""A runtime that dies while it describes its device (only doctor's process that asks it, and ``info``, do),
leaving processes behind that hold what it inherited: doctor's pipe from that process among them."""


def test_doctor_ends_when_the_process_asking_the_runtime_dies_though_what_it_left_holds_its_pipe(
    launcher: Launcher, tmp_path: Path
) -> None:
    site = tmp_path / "site-packages"
    lay_out(
        site,
        "acme-gone",
        entry_points={"accelhal": {"acmegone": "acme_gone"}},
        files={"acme_gone.py": DESCRIBED_THEN_GONE},
    )
    pids = tmp_path / "left"
    started = launcher.start("doctor", "--json", env={"PYTHONPATH": str(site), "ACME_LEFT": str(pids)})
    result = launcher.wait(started, timeout=ENDS_WITHIN)  # not the 300 s a start-up may take
    ended = time.monotonic()
    assert result.returncode == 1, result.output
    titles = [problem["title"] for problem in result.json()["problems"] if problem["code"] == "runtime-error"]
    assert titles == ["the 'acmegone' runtime did not answer what 'accelhal info' asks"], result.output
    assert len(pids.read_text().split()) >= LEFT
    assert not _left_after(pids, ended), result.output
