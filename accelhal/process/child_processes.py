"""Start helper processes that end with the process that started them, and with all they started.

Each helper leads a process group of its own, which :func:`kill_tree` stops and then kills as a whole, and is
killed by the kernel when its parent dies (:func:`die_with_parent`, Linux); a process that keeps helpers alive
becomes a subreaper (:func:`become_subreaper`). Elsewhere than on Linux only the process groups remain.
:func:`run` is :func:`subprocess.run` on these terms. Why, and an example: ``docs/contributing.md``, "Helper
processes".
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
FREEZE_ROUNDS = 50
"""Scans of a tree at most while stopping it (each finds the processes started since the last; usually two)."""
EXIT_POLL = 0.05
"""Seconds between two looks at whether a child :func:`run` follows has ended."""


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


def become_subreaper() -> bool:
    """Have the processes this process's descendants leave behind re-parented to it (Linux); whether they are.

    A daemon (a double ``fork()``) or the child of a process that ended then stays a descendant of
    this process, which :func:`kill_tree` and :func:`descendants` find. Elsewhere (no
    ``PR_SET_CHILD_SUBREAPER``) such a process goes to init, out of reach.
    """
    return _PRCTL is not None and _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


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
    """Kill ``pid`` (not yet waited for), every descendant of it and its process group, with ``SIGKILL``.

    The tree is stopped first (``SIGSTOP``, scan after scan until no process of it is left running),
    so that none of it starts a process, or leaves one to init, while it is killed.
    """
    _kill(pid, [pid])


def kill_descendants(pid: int) -> None:
    """Kill every descendant of ``pid`` (this process, usually), as :func:`kill_tree` kills a tree, but not ``pid``."""
    _kill(pid, [])


def _kill(root: int, stopped: list[int]) -> None:
    for target in stopped:
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGSTOP)
    for _ in range(FREEZE_ROUNDS):
        found = [child for child in descendants(root) if child not in stopped]
        if not found:
            break
        for target in found:
            with contextlib.suppress(OSError):
                os.kill(target, signal.SIGSTOP)
        stopped += found
    for target in stopped:
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGKILL)
    if stopped and stopped[0] == root:
        kill_group(root)


def kill_group(leader: int) -> None:
    """Kill the process group ``leader`` led (what is left of it: the leader may be gone), with ``SIGKILL``."""
    if hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(leader, signal.SIGKILL)


def run(command: Sequence[str], timeout: float, **options: Any) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` with output captured as text, in a process group of its own that dies with this process.

    The child has ended when it exits: what it wrote until then is its output, however long a
    process it started keeps its pipes open. When ``timeout`` passes, or this process is
    interrupted while it waits, the child and everything it started are killed
    (:func:`kill_tree`) before :class:`subprocess.TimeoutExpired` or the interruption
    propagates; what the child left in its group is killed when it ends.
    """
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen_options(), **options
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        streams = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        until = time.monotonic() + timeout
        try:
            for fd, data in output_until_exit(process, list(streams), lambda: until):
                streams[fd] += data
            process.wait()
        except BaseException as error:
            kill_tree(process.pid)
            process.wait()
            if isinstance(error, TimeoutError):
                raise subprocess.TimeoutExpired(process.args, timeout) from None
            raise
        finally:
            kill_group(process.pid)
        stdout, stderr = (bytes(data).decode(errors="replace") for data in streams.values())
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def output_until_exit(
    process: subprocess.Popen[bytes], fds: Sequence[int], deadline: Callable[[], float]
) -> Iterator[tuple[int, bytes]]:
    """Yield what ``process`` writes to ``fds`` as ``(fd, data)``, until it has exited and they hold nothing more.

    A pipe that reaches its end leaves ``fds``; one that a process it started holds open does not
    keep it going: the child has ended when it exits. ``deadline()`` is a :func:`time.monotonic`
    value, asked before every wait (the caller may move it); once it has passed, raises
    :class:`TimeoutError`.
    """
    open_fds = list(fds)
    while open_fds:
        exited = process.poll() is not None
        wait = 0.0 if exited else min(EXIT_POLL, deadline() - time.monotonic())
        if wait < 0:
            raise TimeoutError(f"{process.args!r} did not exit in time")
        ready, _, _ = select.select(open_fds, [], [], wait)
        if not ready and exited:
            return
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                yield fd, data
            else:
                open_fds.remove(fd)
