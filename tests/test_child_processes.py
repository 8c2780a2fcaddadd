"""A helper process has ended when it exits, and what it started ends with it.

:func:`accelhal.process.child_processes.run` (the conformance kit's fresh processes) returns
what the child wrote once the child exits, although a process the child started and never
waited for (a ``fork()`` holding its pipes, a daemon in a session of its own) sleeps on; and
once it has returned, the child's own group is gone.
"""

from __future__ import annotations

import os
import sys
import time

import psutil

from accelhal.process import child_processes

LEAVES_A_SLEEPER = """
import os, sys, time
if os.fork() == 0:  # holds the child's stdout and stderr, in the child's group
    time.sleep(600)
    os._exit(0)
print(os.getpid(), flush=True)
"""


def test_run_returns_at_the_childs_exit_and_its_group_goes_with_it() -> None:
    started = time.monotonic()
    done = child_processes.run([sys.executable, "-c", LEAVES_A_SLEEPER], timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    child = int(done.stdout)
    assert took < 30, f"{took:.1f} s: it waited for the sleeper's pipes"
    time.sleep(0.5)
    assert not _living_in_group(child)


def _living_in_group(group: int) -> list[int]:
    """The live (not zombie) processes of process group ``group``."""
    found = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == group and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except OSError:
            continue
    return found
