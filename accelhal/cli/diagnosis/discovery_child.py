"""Run discovery in a child process for ``accelhal doctor``, which survives the plugin that ends or hangs it.

:func:`run_guarded` runs what a program would (``import torch``, :func:`accelhal.detect`, every
deferred plugin) in a child, and follows the plugin steps it announces. When the child dies or
a step outlives ``ACCELHAL_DOCTOR_TIMEOUT``, the step names the plugin, and the child runs again
with that plugin blocked; each :class:`Fault` says which plugin to block and how. A step that
hung is declared to the command, which waits on it no more. Why: ``docs/contributing.md``,
"Discovery in a child".
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from accelhal.process import child_processes, watchdog

STEP_PREFIX = "accelhal-doctor-step "
RESULT_PREFIX = "accelhal-doctor-result "
SETUP_LIMIT = 300.0
"""Seconds allowed to the child's own steps (starting, ``import torch``, writing its answer)."""
MAX_ROUNDS = 8
"""Children run at most (each after blocking one more faulty plugin)."""
EXIT_DRAIN = 1.0
"""Seconds without more of its output after which the child that ended is taken to have said all it wrote (its
pipes end at once, unless a process it started holds them)."""
PLUGIN_STEPS = frozenset({"import", "probe", "instantiate"})

_CHILD = """
import json, os, sys
sys.path[:] = json.loads(sys.argv[1])
from accelhal.cli.diagnosis.discovery_child import child_main
child_main(json.loads(sys.argv[2]))
os._exit(0)
"""
"""The child's program. It writes its answer unbuffered, then ends without the interpreter's
shutdown, which after ``import torch`` takes about 0.4 s and tells the parent nothing."""


@dataclass
class Fault:
    """A plugin step that ended the child process or outlived its limit."""

    plugin: str
    stage: str
    """``import``, ``probe`` or ``instantiate``."""
    backend: str
    source: str
    """``"built-in"`` or ``"<distribution> <version>"``."""
    how: str
    """How the step ended, for example ``"exit status 3"``, ``"signal SIGSEGV"`` or ``"no answer within 60 s"``."""
    hung: bool
    output: str
    """The last lines the child wrote to stderr."""


@dataclass
class Outcome:
    """What the guarded discovery found."""

    faults: list[Fault] = field(default_factory=list)
    completed: bool = False
    """True when a child ran discovery to the end (with the faulty plugins blocked)."""
    unexplained: str | None = None
    """How the last child failed outside any plugin step, when it did."""
    torch_error: str | None = None
    """``import torch`` failed in the child: the last line of its error."""
    answer: dict[str, Any] = field(default_factory=dict)
    """The completed child's timings (``plugins`` and ``candidates``, with their seconds); or, where selection
    refused a bad variable, ``refused`` (its message) and ``variable``."""
    blocked: list[str] = field(default_factory=list)
    """The plugins blocked to complete discovery (also named by the faults)."""


# ---------------------------------------------------------------------------- the child
def child_main(known_hangs: list[dict[str, Any]] | None = None) -> None:
    """The child's side: announce each step on fd 2, then the timings on fd 1 (as prefixed JSON lines).

    A step the command knows hung (``known_hangs``, as ``accelhal.cli.supervision.deadline.known_hangs``
    writes them, besides those a forked child inherits) is refused at once.
    """
    from accelhal.cli.output.warnings_filter import hide_torch_numpy_warning
    from accelhal.cli.supervision import deadline

    hide_torch_numpy_warning()  # its stderr is quoted as a crashing plugin's last output
    deadline.refuse_known_hangs(known_hangs or ())

    steps, answers = os.dup(2), os.dup(1)  # plugins may replace sys.stdout/sys.stderr

    def emit(fd: int, prefix: str, data: object) -> None:
        os.write(fd, (prefix + json.dumps(data) + "\n").encode())

    refuse = watchdog.listener

    def follow(step: watchdog.Step | None, starting: bool) -> None:
        """Announce each plugin step that starts, once the command's refusal (if any) let it run."""
        if refuse is not None:
            refuse(step, starting)
        if starting and step is not None and step.plugin and step.kind in PLUGIN_STEPS:
            emit(steps, STEP_PREFIX, [step.kind, step.plugin, step.backend, step.source])

    watchdog.listener = follow
    emit(steps, STEP_PREFIX, ["torch", "", "", ""])
    try:
        import torch  # noqa: F401  (first, so that no probe is charged for it)
    except Exception as exc:
        emit(answers, RESULT_PREFIX, {"torch_error": f"{type(exc).__name__}: {exc}"})
        return
    import accelhal.report  # noqa: F401  (pydantic, which detect() needs, is not a plugin's time either)
    from accelhal.errors import ConfigurationError
    from accelhal.selection import detect, registry

    emit(steps, STEP_PREFIX, ["select", "", "", ""])
    try:
        report = detect()
        loaded = registry()
    except ConfigurationError as exc:  # a bad variable, which the settings check names: no crash
        emit(answers, RESULT_PREFIX, {"refused": str(exc), "variable": exc.variable})
        return
    loaded.load_deferred()
    emit(steps, STEP_PREFIX, ["answer", "", "", ""])
    emit(
        answers,
        RESULT_PREFIX,
        {
            "plugins": [[p.name, p.import_seconds] for p in loaded.plugins],
            "candidates": [[c.name, c.plugin, c.probe_seconds] for c in report.candidates],
        },
    )


# ---------------------------------------------------------------------------- the parent
@dataclass
class _Run:
    answer: dict[str, Any] | None = None
    step: list[str] | None = None
    how: str = ""
    hung: bool = False
    stderr: list[str] = field(default_factory=list)


def _pump(stream: IO[str], tag: str, into: queue.Queue[tuple[str, str | None]]) -> None:
    for line in stream:
        into.put((tag, line))
    into.put((tag, None))


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _close_pipes(proc: subprocess.Popen[str] | _ForkedChild, pumps: list[threading.Thread]) -> None:
    """Close the child's pipes whose readers are done (at their end).

    A pipe still held open by a process the child started keeps its reader, and stays open
    (until the command ends, and that process with it).
    """
    for pump, stream in zip(pumps, (proc.stdout, proc.stderr), strict=True):
        pump.join(timeout=0.1)
        if stream is not None and not pump.is_alive():
            stream.close()


def _run_child(env: dict[str, str], step_limit: float) -> _Run:
    """One child; follows its steps, kills it (and what it started) when a step outlives its limit.

    The child runs in a session of its own (a terminal's Ctrl-C reaches this process, which kills
    it) and dies with this process (:mod:`accelhal.process.child_processes`). Its plugin steps are this process's
    steps too, unbounded here (the child's limit bounds them), so that a stopped command names them.
    """
    with watchdog.region():
        return _follow_child(env, step_limit)


class _ForkedChild:
    """The discovery child as a ``fork()`` of this process, which imported torch already: what a fresh one would do.

    It leads a session of its own and dies with this process, as the fresh child does; it forgets
    this process's plugins, step listener and signal handlers, takes ``env`` as its environment,
    and ends with ``os._exit``. Its ``import torch`` step finds torch imported, as this process did
    under the same environment. Started where a fresh interpreter's ``import torch`` would be
    spent again (about 1.3 s of CPU on two cores, 0.1 s for the fork): a program that imported
    torch before running the checks, or the test suite's warm interpreters.
    """

    def __init__(self, env: dict[str, str]) -> None:
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(out_read)
            os.close(err_read)
            _forked_child_main(env, parent, out_write, err_write)
        os.close(out_write)
        os.close(err_write)
        self.stdout = open(out_read, errors="replace")  # noqa: SIM115  (closed by _close_pipes)
        self.stderr = open(err_read, errors="replace")  # noqa: SIM115

    def wait(self) -> int:
        """The child's exit status, negative for the signal that ended it (as :meth:`subprocess.Popen.wait`)."""
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def _forked_child_main(env: dict[str, str], parent: int, stdout: int, stderr: int) -> None:
    status = 1
    try:
        import faulthandler

        os.setsid()
        child_processes.die_with_parent(parent)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGTTOU):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        faulthandler.unregister(signal.SIGUSR1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((devnull, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(env)
        from accelhal.discovery import plugins

        plugins.forget_registry()
        watchdog.listener = None
        child_main()  # (the hangs its worker knew are this process's too)
        status = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(status)


DEVICE_MODULES = ("cuda", "xpu", "mtia")
"""torch's device modules asked whether this process made a device context, besides the PrivateUse1 device's."""


def _device_context_made() -> bool:
    """Whether a device module of torch says this process made a device context (a fork could not use it)."""
    torch = sys.modules["torch"]
    try:
        names = {*DEVICE_MODULES, torch._C._get_privateuse1_backend_name()}
        return any(
            callable(asked := getattr(getattr(torch, name, None), "is_initialized", None)) and asked() for name in names
        )
    except Exception:  # a vendor module that cannot say: as if it had one
        return True


def _can_fork() -> bool:
    """Whether the child may be forked: torch imported here, no device context, no plugin discovered yet."""
    from accelhal.discovery import plugins

    return (
        hasattr(os, "fork")
        and "torch" in sys.modules
        and "accelhal.selection" not in sys.modules
        and plugins.current_registry() is None
        and not _device_context_made()
    )


def _start_child(env: dict[str, str]) -> subprocess.Popen[str] | _ForkedChild:
    """The discovery child: forked where :func:`_can_fork`, else a fresh interpreter with this ``sys.path``."""
    if _can_fork():
        return _ForkedChild(env)
    from accelhal.cli.supervision import deadline

    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, json.dumps(sys.path), json.dumps(deadline.known_hangs())],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        **child_processes.popen_options(new_session=True),
    )


def _follow_child(env: dict[str, str], step_limit: float) -> _Run:
    run = _Run()
    proc = _start_child(env)
    lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(stream, tag, lines), daemon=True)
        for stream, tag in ((proc.stdout, "out"), (proc.stderr, "err"))
    ]
    codes: list[int] = []

    def wait() -> None:  # the child's own end, whoever else holds its pipes
        codes.append(proc.wait())
        lines.put(("exit", None))

    waiter = threading.Thread(target=wait, daemon=True)
    for thread in (*pumps, waiter):
        thread.start()
    open_streams, exited, deadline = 2, False, time.monotonic() + SETUP_LIMIT
    while open_streams:
        try:
            tag, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            if exited:
                break  # all it wrote before it ended is read: a process it started holds its pipes
            limit = step_limit if run.step and run.step[0] in PLUGIN_STEPS else SETUP_LIMIT
            run.hung, run.how = True, f"no answer within {limit:g} s"
            child_processes.kill_tree(proc.pid)
            break
        if exited:
            deadline = time.monotonic() + EXIT_DRAIN
        if tag == "exit":
            exited, deadline = True, time.monotonic() + EXIT_DRAIN
            child_processes.kill_group(proc.pid)  # what it left in its group
        elif line is None:
            open_streams -= 1
        elif tag == "err" and line.startswith(STEP_PREFIX):
            run.step = json.loads(line[len(STEP_PREFIX) :])
            if run.step and run.step[0] in PLUGIN_STEPS:
                watchdog.enter(run.step[0], run.step[1], run.step[2], bounded=False)
            else:
                watchdog.leave()
            if not exited:
                deadline = time.monotonic() + (step_limit if run.step and run.step[0] in PLUGIN_STEPS else SETUP_LIMIT)
        elif tag == "out" and line.startswith(RESULT_PREFIX):
            run.answer = json.loads(line[len(RESULT_PREFIX) :])
        elif tag == "err":
            run.stderr = [*run.stderr[-19:], line.rstrip("\n")]
    waiter.join()
    child_processes.kill_group(proc.pid)  # what it left behind
    _close_pipes(proc, pumps)
    if not run.hung:
        run.how = _describe_exit(codes[0])
    return run


def run_guarded(environ: dict[str, str], step_limit: float) -> Outcome:
    """Run discovery in child processes until one completes, blocking each plugin that kills or hangs one."""
    from accelhal.cli.supervision import deadline
    from accelhal.discovery.plugins import FALLBACK_BACKEND
    from accelhal.process.settings import block_plugins_with

    outcome = Outcome()
    for _ in range(MAX_ROUNDS):
        env = dict(environ)
        if outcome.blocked:
            env["ACCELHAL_BLOCK_PLUGINS"] = block_plugins_with(environ.get("ACCELHAL_BLOCK_PLUGINS"), outcome.blocked)
        run = _run_child(env, step_limit)
        if run.answer is not None:
            outcome.completed = True
            outcome.torch_error = run.answer.get("torch_error")
            outcome.answer = run.answer
            return outcome
        kind, plugin, backend, source = run.step or ["start", "", "", ""]
        output = "\n".join(run.stderr[-5:])
        if kind not in PLUGIN_STEPS:
            outcome.unexplained = f"the discovery child process ended ({run.how}) during its {kind!r} step"
            if kind == "torch":
                outcome.torch_error = f"'import torch' ended the process ({run.how})"
            outcome.unexplained += f"; its last output: {output}" if output else ""
            return outcome
        outcome.faults.append(Fault(plugin, kind, backend, source, run.how, run.hung, output))
        if run.hung:  # no later step of the command waits on it again
            deadline.declare_hung(kind, plugin, backend, step_limit, "ACCELHAL_DOCTOR_TIMEOUT")
        if plugin == FALLBACK_BACKEND or plugin in outcome.blocked:
            return outcome  # the fallback cannot be blocked; a blocked plugin cannot run: nothing more to learn
        outcome.blocked.append(plugin)
    return outcome
