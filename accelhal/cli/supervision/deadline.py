"""Bounded device calls for the ``accelhal`` command: a call that never returns is named, and the command goes on.

A driver that never answers (a wedged device, a half-installed vendor stack) hangs whatever
calls it, and such a call usually holds the GIL: no thread of the process runs again, and no
signal handler written in Python either. So no deadline kept inside the process can end
the call or say where it is stuck. :func:`supervise` runs the command in a *worker*, a
``fork()`` of the command's process, made before the command imports torch; the process
the shell started (the *watcher*) imports nothing more and follows the worker's steps
(:mod:`accelhal.process.watchdog`: each plugin import, backend probe, construction, and each
call the command makes into a device's runtime), which the worker writes on a pipe.

When a step runs longer than the deadline (``--timeout``, default ``ACCELHAL_TIMEOUT`` or
60 s), the watcher has the worker write its Python stacks (:mod:`faulthandler`'s signal
handler, which runs without the GIL), kills the worker and everything it started
(:func:`accelhal.process.child_processes.kill_tree`), prints on stderr the backend, the call and the
stack, and forks a new worker in which that step fails at once with
:class:`DeviceCallHungError`. The command then treats it as it treats a call that raised (a
probe's ``probe-error`` verdict, ``doctor``'s ``runtime-error`` finding, ``info``'s exit
status 1): it goes on with the other backends, and keeps its exit statuses and its single
``--json`` document. A call that answers within the deadline, however slowly, is not
touched. The commands collect what they print before printing it, so a worker that is
killed has printed nothing on stdout.

Costs on a healthy machine: one ``fork()`` (about 1 ms before ``import torch``; about
25 ms of CPU, with the worker's exit, in a process that imported torch already, as the test
suite's warm interpreters have), a pipe write per step. Both processes end with
``os._exit`` once the output is flushed, without the interpreter's shutdown, which more
than pays for the fork: a warm ``accelhal info`` took 211 ms of CPU where it took 376 ms
with the fork and a shutdown, and a fresh one 1.3 s where the unbounded ``main()`` and its
shutdown took 1.7 s (2 cores, loaded).

The worker leads a process group of its own and dies with the watcher
(``PR_SET_PDEATHSIG``). ``SIGINT`` (Ctrl-C: the terminal sends it to the watcher's group
only), ``SIGTERM`` and ``SIGHUP`` reach the watcher, which says in one line what the worker
was doing (the backend, the call and the function it was in), kills the worker's tree and
exits with 130 for ``SIGINT``, or by the same signal for the others (129, 143 to a shell).

Example::

    $ accelhal --timeout 5 list
    accelhal: backend 'acme' (its probe) gave no answer within 5 s (--timeout); it is stuck in:
      File "/site-packages/acme/runtime.py", line 40 in device_count
      ...
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from accelhal.process import child_processes, watchdog
from accelhal.process.settings import SECONDS_DEFAULTS

TIMEOUT_VARIABLE = "ACCELHAL_TIMEOUT"
DEFAULT_TIMEOUT = SECONDS_DEFAULTS[TIMEOUT_VARIABLE]
"""Seconds a step may run when neither ``--timeout`` nor :data:`TIMEOUT_VARIABLE` says otherwise."""
MAX_ATTEMPTS = 8
"""Workers started at most (each after one more call hung)."""
STACK_WAIT = 1.0
"""Seconds the watcher waits for a stuck worker's stacks."""
STACK_QUIET = 0.05
"""Seconds without more of the stacks after which the dump is taken as complete (the handler writes it at once)."""
STACK_FRAMES = 12
"""Frames of a stuck worker's stack printed (innermost first)."""
INTERRUPTED = 130
"""Exit status after ``SIGINT`` (128 + 2, as shells report a program that Ctrl-C ended)."""
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Worker:
    """Whether this process is a command's worker; owned here, set once by :func:`_worker`."""

    in_worker = False


_state = _Worker()


def in_worker() -> bool:
    """Whether this process is a command's worker, where a ``KeyboardInterrupt`` is a plugin's, never the user's.

    Ctrl-C reaches the watcher's process group, not the worker's (:func:`supervise` stops the worker itself).
    """
    return _state.in_worker


class DeviceCallHungError(Exception):
    """A call that hung in an earlier worker of this command, refused instead of being made again."""

    names_its_place = True
    """Its message says where the call was stuck (reports add no frame of their own)."""


@dataclass
class Hang:
    """A step that ran past the deadline."""

    key: tuple[str, str, str, str]
    what: str
    """The backend or plugin and the call (:meth:`accelhal.process.watchdog.Step.describe`)."""
    skip: str
    """The variable that skips it."""
    seconds: float
    stack: list[str] = field(default_factory=list)
    """The stuck thread's frames, innermost first (``File "...", line N in function``)."""

    @property
    def place(self) -> str:
        """The innermost frame, ``device_count (/x/acme.py:40)``, or ``an unknown place``."""
        for line in self.stack:
            parts = line.strip().split('"')
            if len(parts) == 3 and parts[0].startswith("File"):
                lineno, _, function = parts[2].strip(" ,").removeprefix("line ").partition(" in ")
                return f"{function} ({parts[1]}:{lineno})"
        return "an unknown place"

    def message(self) -> str:
        """What the refused call raises in the next worker."""
        return f"no answer within {self.seconds:g} s (--timeout), stuck in {self.place}; to skip it: {self.skip}"


@dataclass(frozen=True)
class Death:
    """A worker that a step ended: the step named, and how it ended the process."""

    what: str
    """The backend or plugin and the call (:meth:`accelhal.process.watchdog.Step.describe`)."""
    how: str
    """``"raised KeyboardInterrupt, which ends a program"``, ``"ended the process (exit status 3)"`` or
    ``"ended the process (signal SIGSEGV)"``."""
    skip: str

    def message(self, command: str) -> str:
        """The command's one error line."""
        skip = f"; to skip it: {self.skip}" if self.skip else ""
        return f"'accelhal {command}' stopped: {self.what} {self.how}{skip}"


@dataclass
class _Running:
    """What the watcher knows of its worker."""

    pid: int
    steps: int
    stacks: int
    step: dict[str, Any] | None = None
    since: float = 0.0
    buffer: bytes = b""
    fault: dict[str, Any] | None = None
    """The step in which the worker met an exception that ends a program, as the worker wrote it."""


class _StoppedError(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def resolve_timeout(given: float | None, environ: dict[str, str] | os._Environ[str]) -> float:
    """``--timeout``, else :data:`TIMEOUT_VARIABLE`, else :data:`DEFAULT_TIMEOUT` (raises for a bad variable)."""
    from accelhal.process.settings import read_seconds

    if given is not None:
        return given
    return read_seconds(TIMEOUT_VARIABLE, environ)


def supervise(run: Callable[[], int], command: str, timeout: float, json_output: bool) -> int:
    """Run ``run()`` in a worker process, bounding each of its steps by ``timeout`` seconds; its exit status."""
    hung: dict[tuple[str, str, str, str], Hang] = {}
    previous = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    running: _Running | None = None
    try:
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, _stop)
        for _ in range(MAX_ATTEMPTS):
            running = _start(run, hung)
            outcome = _follow(running, timeout)
            if isinstance(outcome, int):
                return outcome
            if isinstance(outcome, Death):
                return _fail(command, json_output, outcome.message(command))
            hung[outcome.key] = outcome
            _say(
                f"accelhal: {outcome.what} gave no answer within {outcome.seconds:g} s (--timeout); it is stuck in:",
                *outcome.stack[:STACK_FRAMES],
                f"accelhal: going on without it; to skip it: {outcome.skip}",
            )
        return _fail(command, json_output, f"{len(hung)} calls into device runtimes hung; stopped")
    except _StoppedError as stop:
        _stopped(command, json_output, running, stop.signum)
    finally:
        if running is not None:
            child_processes.kill_group(running.pid)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _stopped(command: str, json_output: bool, running: _Running | None, signum: int) -> NoReturn:
    """Say what the worker was doing, kill its tree, and end this process at once as ``signum`` asks."""
    doing = "no call into a device's runtime was running"
    if running is not None and running.step is not None:
        if running.step["bounded"]:
            hang = _stuck(running, 0.0, wait=STACK_WAIT / 4)
            doing = f"it was in {hang.what}, in {hang.place}"
        else:  # a step of a child process the worker follows (doctor's discovery)
            doing = f"it was in {running.step['what']}, in a child process"
    if running is not None:
        child_processes.kill_tree(running.pid)
    _fail(command, json_output, f"'accelhal {command}' stopped by {signal.Signals(signum).name}: {doing}")
    sys.stdout.flush()
    sys.stderr.flush()
    if signum == signal.SIGINT:
        os._exit(INTERRUPTED)  # no interpreter shutdown: nothing is left to do, and the user is waiting
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)  # end as the signal ends a program: a shell reports 128 + N
    os._exit(128 + signum)


def _stop(signum: int, frame: object) -> None:
    for other in STOPPING_SIGNALS:  # one report, however many signals follow
        signal.signal(other, signal.SIG_IGN)
    raise _StoppedError(signum)


def _say(*lines: str) -> None:
    from accelhal.text import visible  # a stack quotes a plugin's code: its lines are shown as text

    sys.stderr.write("".join(f"{visible(line)}\n" for line in lines))
    sys.stderr.flush()


def _fail(command: str, json_output: bool, message: str) -> int:
    from accelhal.cli.output import render
    from accelhal.cli.output.status import FAILED

    render.error(message)
    if json_output:
        from accelhal.cli.output.models import ErrorOutput

        render.print_json(ErrorOutput(command=command, error=message))
    return FAILED


# ---------------------------------------------------------------------------- the worker
def _start(run: Callable[[], int], hung: dict[tuple[str, str, str, str], Hang]) -> _Running:
    steps_read, steps_write = os.pipe()
    stacks_read, stacks_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    watcher = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(steps_read)
        os.close(stacks_read)
        _worker(run, hung, watcher, steps_write, stacks_write)
    os.close(steps_write)
    os.close(stacks_write)
    return _Running(pid, steps_read, stacks_read)


def _worker(
    run: Callable[[], int], hung: dict[tuple[str, str, str, str], Hang], watcher: int, steps: int, stacks: int
) -> NoReturn:
    status = 1
    try:
        import faulthandler

        os.setpgid(0, 0)
        child_processes.die_with_parent(watcher)
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a group of its own may write to the terminal
        faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)

        last: dict[str, Any] = {}

        def listen(step: watchdog.Step | None, starting: bool) -> None:
            if step is None:
                os.write(steps, b"{}\n")
                return
            record = {
                "key": step.key,
                "what": step.describe(),
                "skip": step.skip_hint(),
                "thread": step.thread,
                "bounded": step.bounded,
                "limit": step.floor,
            }
            last.update(record)
            os.write(steps, (json.dumps(record) + "\n").encode())
            hang = hung.get(step.key) if starting else None
            if hang is not None:
                raise DeviceCallHungError(hang.message())

        watchdog.listener = listen
        _state.in_worker = True
        try:
            status = run()
        except KeyboardInterrupt:  # never the user's (in_worker()): named with the step last started
            if not last:
                raise
            os.write(
                steps, (json.dumps({"fault": "raised KeyboardInterrupt, which ends a program", **last}) + "\n").encode()
            )
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        status = 0  # the reader went away: main() says so for the writes it made
    except BaseException:  # main() contains what the command raises; this is a fault of this module
        import traceback

        traceback.print_exc()
    finally:
        os._exit(status)


# ---------------------------------------------------------------------------- the watcher
def _follow(running: _Running, timeout: float) -> int | Hang | Death:
    """Read the worker's steps until it ends or a step outlives ``timeout``.

    Returns the worker's exit status, the :class:`Death` a step caused, or the :class:`Hang`.
    """
    while True:
        step = running.step
        limit = max(timeout, step["limit"]) if step is not None else timeout
        wait = max(0.0, running.since + limit - time.monotonic()) if step is not None and step["bounded"] else None
        ready, _, _ = select.select([running.steps], [], [], wait)
        if not ready:
            hang = _stuck(running, limit)
            child_processes.kill_tree(running.pid)
            os.waitpid(running.pid, 0)
            _close(running)
            return hang
        data = os.read(running.steps, 65536)
        if not data:  # the worker ended
            code = os.waitstatus_to_exitcode(os.waitpid(running.pid, 0)[1])
            _close(running)
            return _death(running, code) or (code if code >= 0 else 128 - code)  # a signal, as a shell reports it
        running.buffer += data
        *lines, running.buffer = running.buffer.split(b"\n")
        for line in lines:
            record = json.loads(line)
            if "fault" in record:
                running.fault = record
                continue
            running.step, running.since = (record or None), time.monotonic()


def _death(running: _Running, code: int) -> Death | None:
    """The step that ended the worker: one that raised what ends a program, or one still running at its end."""
    if running.fault is not None:
        return Death(str(running.fault["what"]), str(running.fault["fault"]), str(running.fault["skip"]))
    step = running.step
    if step is None or not step["bounded"]:  # a child's step (doctor's discovery) is the child's to report
        return None
    how = f"exit status {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
    return Death(str(step["what"]), f"ended the process ({how})", str(step["skip"]))


def _stuck(running: _Running, timeout: float, wait: float = STACK_WAIT) -> Hang:
    """The running step as a :class:`Hang`, with the stuck thread's stack (read from the worker's faulthandler)."""
    step = running.step or {}
    kind, plugin, backend, call = step.get("key", ("", "", "", ""))
    hang = Hang((kind, plugin, backend, call), str(step.get("what", "")), str(step.get("skip", "")), timeout)
    try:
        os.kill(running.pid, signal.SIGUSR1)
    except OSError:
        return hang
    dump, deadline = b"", time.monotonic() + wait
    while time.monotonic() < deadline:  # until the dump has stopped growing for a moment
        ready, _, _ = select.select([running.stacks], [], [], STACK_QUIET if dump else deadline - time.monotonic())
        if not ready:
            if dump:
                break
            continue
        chunk = os.read(running.stacks, 65536)
        if not chunk:
            break
        dump += chunk
    hang.stack = _thread_stack(dump.decode(errors="replace"), int(step.get("thread", 0)))
    return hang


def _thread_stack(dump: str, thread: int) -> list[str]:
    """The frames faulthandler wrote for ``thread`` (``Thread 0x... (most recent call first):`` blocks)."""
    blocks: dict[int, list[str]] = {}
    frames: list[str] | None = None
    for line in dump.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            frames = blocks.setdefault(int(line.split("0x", 1)[1].split()[0], 16), [])
        elif frames is not None and line.strip().startswith("File "):
            frames.append(line.rstrip())
    return blocks.get(thread) or next(iter(blocks.values()), [])


def _close(running: _Running) -> None:
    for fd in (running.steps, running.stacks):
        os.close(fd)
