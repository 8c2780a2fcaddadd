"""Helper processes that end with the process that started them, and with everything they started.

A child stuck in a device's runtime never exits by itself, and a child that outlives its parent
is re-parented to init, where it may hold a device. So every helper process accelhal starts
(the command's worker and doctor's discovery child, the conformance kit's fresh processes):

- runs in a process group of its own, which its parent kills as a whole (:func:`kill_tree`)
  when the child's time is up, and whenever the parent ends early;
- is killed by the kernel when its parent dies, however the parent dies (``SIGKILL``
  included): :func:`die_with_parent` asks for it with ``prctl(PR_SET_PDEATHSIG)`` on Linux.
  A child that starts its own children does the same for them, so a whole tree ends.

Elsewhere than on Linux the process groups remain, and a parent killed with ``SIGKILL``
leaves its children running.

Example::

    >>> done = run([sys.executable, "-c", "print(1)"], timeout=60)
    >>> done.stdout.strip()
    '1'
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # a libc without prctl
        return None
    return function


_PRCTL = _prctl()


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel send ``SIGKILL`` to this process when its parent dies (Linux; elsewhere nothing).

    ``parent`` is the pid the caller expects as its parent: where it has died already (before the
    request was made), this process exits at once.
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(137)


def _setup(parent: int, new_session: bool) -> Callable[[], None]:
    def setup() -> None:  # runs in the child between fork and exec: system calls only
        if not new_session:  # (start_new_session made it a group leader already)
            os.setpgid(0, 0)
        die_with_parent(parent)

    return setup


def popen_options(new_session: bool = False) -> dict[str, Any]:
    """Keyword arguments for :class:`subprocess.Popen`: a process group of its own, killed when this process dies.

    With ``new_session``, a session of its own: a terminal's Ctrl-C does not reach it.
    """
    return {"start_new_session": new_session, "preexec_fn": _setup(os.getpid(), new_session)}


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, from ``/proc`` (Linux; elsewhere none)."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{entry.name}/stat", "rb") as stat:
                        fields = stat.read().rsplit(b")", 1)[1].split()
                    parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def kill_tree(pid: int) -> None:
    """Kill ``pid`` (not yet waited for), every descendant of it and its process group, with ``SIGKILL``."""
    for target in (pid, *descendants(pid)):
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGKILL)
    kill_group(pid)


def kill_group(leader: int) -> None:
    """Kill the process group ``leader`` led (what is left of it: the leader may be gone), with ``SIGKILL``."""
    if hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(leader, signal.SIGKILL)


def run(command: Sequence[str], timeout: float, **options: Any) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` with output captured as text, in a process group of its own that dies with this process.

    When ``timeout`` passes, or this process is interrupted while it waits, the child and everything
    it started are killed (:func:`kill_tree`) before :class:`subprocess.TimeoutExpired` or the
    interruption propagates; what the child left in its group is killed when it ends.
    """
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_options(), **options
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:
            kill_tree(process.pid)
            process.communicate()
            raise
        finally:
            kill_group(process.pid)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
