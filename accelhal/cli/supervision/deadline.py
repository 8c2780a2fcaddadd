"""Bound each call the ``accelhal`` command makes into a device's runtime: one that hangs is named, and skipped.

:func:`supervise` runs the command in a *worker* (a ``fork()`` made before ``import torch``) and
follows its steps from the process the shell started. A step that outlives ``--timeout`` is named
on stderr with its stack, the worker and all it started are killed, and a new worker goes on with
that step failing at once (:class:`DeviceCallHungError`). See ``docs/reference/cli.md``, "A
runtime that never answers"; how it works: ``docs/contributing.md``, "The command's supervision".
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable
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


Key = tuple[str, str, str, str]
"""A step's identity across processes, ``(kind, plugin, backend, call)`` (:attr:`.watchdog.Step.key`)."""


class _Worker:
    """Whether this process is a command's worker, and what it knows of hung steps; owned here."""

    in_worker = False
    pid = -1
    """The worker's own pid (a process a plugin forks from it is not the worker)."""
    steps = -1
    """The worker's end of the steps pipe."""
    hung: dict[Key, Hang]

    def __init__(self) -> None:
        self.hung = {}


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

    key: Key
    what: str
    """The backend or plugin and the call (:meth:`accelhal.process.watchdog.Step.describe`)."""
    skip: str
    """The variable that skips it."""
    seconds: float
    stack: list[str] = field(default_factory=list)
    """The stuck thread's frames, innermost first (``File "...", line N in function``)."""
    limit: str = "--timeout"
    """What set the deadline: ``--timeout``, or ``ACCELHAL_DOCTOR_TIMEOUT`` for doctor's discovery child."""

    def record(self) -> dict[str, Any]:
        """The hang as JSON, as one process tells another of it."""
        return {
            "key": list(self.key),
            "what": self.what,
            "skip": self.skip,
            "seconds": self.seconds,
            "stack": self.stack,
            "limit": self.limit,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Hang:
        """The hang :meth:`record` wrote."""
        kind, plugin, backend, call = (str(part) for part in record["key"])
        return cls(
            (kind, plugin, backend, call),
            str(record["what"]),
            str(record["skip"]),
            float(record["seconds"]),
            [str(line) for line in record["stack"]],
            str(record["limit"]),
        )

    @property
    def place(self) -> str:
        """The innermost frame, ``device_count (/x/acme.py:40)``, or ``an unknown place``."""
        for line in self.stack:
            parts = line.strip().split('"')
            if len(parts) == 3 and parts[0].startswith("File"):
                lineno, _, function = parts[2].strip(" ,").removeprefix("line ").partition(" in ")
                return f"{function} ({parts[1]}:{lineno})"
        return "an unknown place"

    def message(self, key: Key | None = None) -> str:
        """What the refused step ``key`` (by default this one) raises in a later worker."""
        where = f", stuck in {self.place}" if self.stack else ""
        said = f"no answer within {self.seconds:g} s ({self.limit}){where}; to skip it: {self.skip}"
        if key is None or key == self.key:
            return said
        return f"not called: {self.what} gave {said}"


_state = _Worker()


def known_hang(step: watchdog.Step) -> Hang | None:
    """The earlier hang that refuses ``step``: the same step, or for a call into a device's runtime, any of its.

    A probe is refused only where the probe itself hung: a backend whose later call hung is still
    probed, and chosen, as it was before.
    """
    hang = _state.hung.get(step.key)
    if hang is None and step.kind == "call" and step.backend:
        hang = next((h for h in _state.hung.values() if h.key[2] == step.backend), None)
    return hang


def declare_hung(kind: str, plugin: str, backend: str, seconds: float, limit: str) -> None:
    """Record that a step another process ran for this command hung, so that no later step waits on it again.

    Doctor's discovery child ran it (``kind``, ``plugin``, ``backend`` as
    :func:`accelhal.process.watchdog.enter` takes them) and was killed after ``seconds`` (``limit``
    names the variable). In a worker, the watcher learns it too, for the workers after this one.
    """
    step = watchdog.Step(kind, plugin, backend)
    hang = Hang(step.key, step.describe(), step.skip_hint(), seconds, limit=limit)
    _state.hung[hang.key] = hang
    if _state.in_worker and os.getpid() == _state.pid:
        os.write(_state.steps, (json.dumps({"hung": hang.record()}) + "\n").encode())


def known_hangs() -> list[dict[str, Any]]:
    """The hangs known to this process, as :meth:`Hang.record` writes them (for a helper process's command line)."""
    return [hang.record() for hang in _state.hung.values()]


def refuse_known_hangs(records: Iterable[dict[str, Any]] = ()) -> None:
    """In a helper process of the command (doctor's discovery child): refuse each step :func:`known_hang` refuses.

    ``records`` adds hangs to those this process knows (a forked helper inherits its worker's).
    A refused step raises :class:`DeviceCallHungError`, as it does in a worker.
    """
    for record in records:
        hang = Hang.from_record(record)
        _state.hung[hang.key] = hang

    def refuse(step: watchdog.Step | None, starting: bool) -> None:
        hang = known_hang(step) if starting and step is not None else None
        if hang is not None and step is not None:
            raise DeviceCallHungError(hang.message(step.key))

    watchdog.listener = refuse


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
    """The keeper's pid (the worker's parent, the leader of their process group)."""
    steps: int
    stacks: int
    lifeline: int
    """The write end of the pipe whose end tells the keeper that the watcher is gone."""
    token: tuple[int, int]
    """The pipe holding the token the worker takes to leave a bounded step (read end, write end)."""
    worker: int = 0
    step: dict[str, Any] | None = None
    since: float = 0.0
    buffer: bytes = b""
    fault: dict[str, Any] | None = None
    """The step in which the worker met an exception that ends a program, as the worker wrote it."""
    ended: int | None = None
    """The worker's exit status (negative: the signal), as the keeper saw it end."""
    done: bool = False
    """The worker finished the command (it printed what the command prints)."""
    learned: list[Hang] = field(default_factory=list)
    """Hangs of steps other processes ran (doctor's discovery child), as the worker declared them."""
    closed: bool = False
    """The watcher's ends of the pipes are closed (:func:`_close`): this worker is over."""


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
    hung: dict[Key, Hang] = {}
    previous = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    running: _Running | None = None
    try:
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, _stop)
        for _ in range(MAX_ATTEMPTS):
            running = _start(run, hung)
            outcome = _follow(running, timeout)
            _close(running)
            hung.update((learned.key, learned) for learned in running.learned)
            if isinstance(outcome, int):
                if not running.done:
                    return _fail(command, json_output, _unfinished(command, outcome))
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
            _close(running)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _unfinished(command: str, code: int) -> str:
    """The error for a worker that ended outside any step without finishing the command."""
    how = f"exit status {code}" if code < 128 else f"signal {_signal_name(code - 128)}"
    return f"'accelhal {command}' stopped: its worker process ended ({how}) before the command had finished"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def _stopped(command: str, json_output: bool, running: _Running | None, signum: int) -> NoReturn:
    """Say what the worker was doing, kill its tree, and end this process at once as ``signum`` asks."""
    doing = "no call into a device's runtime was running"
    if running is not None and not running.closed and running.step is not None:
        if running.step["bounded"]:
            hang = _stuck(running, 0.0, wait=STACK_WAIT / 4)
            doing = f"it was in {hang.what}, in {hang.place}"
        else:  # a step of a child process the worker follows (doctor's discovery)
            doing = f"it was in {running.step['what']}, in a child process"
    if running is not None:
        child_processes.kill_tree(running.pid)
        if not running.closed:
            _read_pending(running)
    printed = running is not None and running.done  # the worker printed the command's own document already
    _fail(
        command, json_output and not printed, f"'accelhal {command}' stopped by {signal.Signals(signum).name}: {doing}"
    )
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


# ---------------------------------------------------------------------------- the keeper and the worker
def _start(run: Callable[[], int], hung: dict[Key, Hang]) -> _Running:
    steps_read, steps_write = os.pipe()
    stacks_read, stacks_write = os.pipe()
    lifeline_read, lifeline_write = os.pipe()
    token = os.pipe()
    os.set_blocking(token[0], False)  # both sides try it, then wait for it with select()
    os.write(token[1], b".")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(steps_read)
        os.close(stacks_read)
        os.close(lifeline_write)
        _keeper(run, hung, steps_write, stacks_write, lifeline_read, token)
    os.close(steps_write)
    os.close(stacks_write)
    os.close(lifeline_read)
    return _Running(pid, steps_read, stacks_read, lifeline_write, token)


def _keeper(
    run: Callable[[], int], hung: dict[Key, Hang], steps: int, stacks: int, lifeline: int, token: tuple[int, int]
) -> NoReturn:
    """Start the worker; say when it ended; kill what is left of its tree then, or when the watcher is gone."""
    try:
        os.setpgid(0, 0)  # the worker's group too: a terminal's Ctrl-C reaches the watcher's group only
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)  # the watcher's to handle; it kills this tree
        child_processes.become_subreaper()
        wake_read, wake_write = os.pipe()
        for fd in (wake_read, wake_write):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        keeper = os.getpid()
        worker = os.fork()
        if worker == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (lifeline, wake_read, wake_write):
                os.close(fd)
            _worker(run, hung, keeper, steps, stacks, token)
        os.write(steps, (json.dumps({"worker": worker}) + "\n").encode())
        code = None
        while code is None:
            ready, _, _ = select.select([lifeline, wake_read], [], [])
            if lifeline in ready:
                break  # the watcher is gone, or done with this worker
            while True:
                try:
                    if not os.read(wake_read, 512):
                        break
                except BlockingIOError:
                    break
            code = _reap(worker)
        child_processes.kill_descendants(keeper)
        if code is not None:
            os.write(steps, (json.dumps({"ended": code}) + "\n").encode())
    finally:
        os._exit(0)


def _reap(worker: int) -> int | None:
    """Reap every child that ended (the worker, and what its tree left to this subreaper); the worker's status."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == worker:
            code = os.waitstatus_to_exitcode(status)


def _take_token(token: int) -> None:
    """Wait for the token and take it (the watcher keeps it once it declared the running step hung: then forever)."""
    while True:
        try:
            if os.read(token, 1):
                return
        except BlockingIOError:
            pass
        select.select([token], [], [])


def _worker(
    run: Callable[[], int], hung: dict[Key, Hang], keeper: int, steps: int, stacks: int, token: tuple[int, int]
) -> NoReturn:
    status = 1
    try:
        import faulthandler

        from accelhal.cli.output import render

        render.own_stdout()  # before any plugin code: what else writes to descriptor 1 goes to stderr
        child_processes.die_with_parent(keeper)
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may write to the terminal
        faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)

        last: dict[str, Any] = {}
        in_bounded = [False]  # whether the running step is bounded: leaving it takes the token
        me = os.getpid()

        def listen(step: watchdog.Step | None, starting: bool) -> None:
            if os.getpid() != me:  # a process a plugin forked from the worker: not the worker
                return
            if step is None:
                line = b"{}\n"
            else:
                record = {
                    "key": step.key,
                    "what": step.describe(),
                    "skip": step.skip_hint(),
                    "thread": step.thread,
                    "bounded": step.bounded,
                    "limit": step.floor,
                }
                last.update(record)
                line = (json.dumps(record) + "\n").encode()
            try:
                if in_bounded[0]:
                    _take_token(token[0])
                    try:
                        os.write(steps, line)
                    finally:
                        os.write(token[1], b".")
                else:
                    os.write(steps, line)
            except OSError:  # plugin code closed the pipes to the command: end; the command names the last step
                os._exit(1)
            in_bounded[0] = step is not None and step.bounded
            hang = known_hang(step) if starting and step is not None and step.bounded else None
            if hang is not None and step is not None:
                raise DeviceCallHungError(hang.message(step.key))

        _state.hung = dict(hung)
        _state.pid, _state.steps = me, steps
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
        try:
            render.stdout().flush()
        except OSError:  # a reader that went away, a full disk: the command met it and said so
            render.close_output(1)
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(steps, b'{"done": true}\n')
    except BrokenPipeError:
        status = 0  # the reader went away: main() says so for the writes it made
        os.write(steps, b'{"done": true}\n')
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
            if _answered(running):
                continue  # it left the step before it was declared hung: as if it had answered in time
            child_processes.kill_tree(running.pid)
            os.waitpid(running.pid, 0)
            return hang
        data = os.read(running.steps, 65536)
        _take_in(running, data)
        if data and running.ended is None:
            continue
        # the worker ended (the keeper said so, and killed what was left of its tree), or the keeper did
        status = os.waitstatus_to_exitcode(os.waitpid(running.pid, 0)[1])
        code = running.ended if running.ended is not None else status
        return _death(running, code) or (code if code >= 0 else 128 - code)  # a signal, as a shell reports it


def _read_pending(running: _Running) -> None:
    """Take in what the worker wrote on the steps pipe and was not read yet."""
    while select.select([running.steps], [], [], 0)[0]:
        data = os.read(running.steps, 65536)
        if not data:
            return
        _take_in(running, data)


def _take_in(running: _Running, data: bytes) -> None:
    """Take in the lines ``data`` completes (the rest waits in the buffer)."""
    running.buffer += data
    *lines, running.buffer = running.buffer.split(b"\n")
    for line in lines:
        _read_record(running, json.loads(line))


def _read_record(running: _Running, record: dict[str, Any]) -> None:
    """Take in one line the worker (or its keeper) wrote on the steps pipe."""
    if "fault" in record:
        running.fault = record
    elif "worker" in record:
        running.worker = int(record["worker"])
    elif "ended" in record:
        running.ended = int(record["ended"])
    elif "done" in record:
        running.done = True
    elif "hung" in record:
        running.learned.append(Hang.from_record(record["hung"]))
    else:
        running.step, running.since = (record or None), time.monotonic()


def _answered(running: _Running) -> bool:
    """Declare the running step hung unless the worker left it meanwhile; whether it did.

    The worker holds the token only while it leaves a bounded step (it writes its next step
    meanwhile). Taken here, the token is kept: the worker can leave the step no more.
    """
    token_read, token_write = running.token
    deadline = time.monotonic() + STACK_WAIT
    while True:
        try:
            if os.read(token_read, 1):
                break
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            return False  # the worker is stuck between two steps: hung all the same
        select.select([token_read], [], [], left)
    ready, _, _ = select.select([running.steps], [], [], 0)
    if ready:  # it wrote its next step before the token was taken
        os.write(token_write, b".")
        while select.select([running.stacks], [], [], 0)[0] and os.read(running.stacks, 65536):
            pass  # the stacks it wrote meanwhile, if any: not those of a later hang
        return True
    return False


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
        if running.worker <= 0:
            return hang
        os.kill(running.worker, signal.SIGUSR1)
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
    """Close the watcher's ends of the worker's pipes (once): the keeper, if still there, ends its tree."""
    if not running.closed:
        running.closed = True
        for fd in (running.steps, running.stacks, running.lifeline, *running.token):
            os.close(fd)
