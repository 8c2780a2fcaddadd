"""Start ``accelhal`` commands side by side, each as a shell starts a job, forked from one warm interpreter.

:mod:`tests.warm` runs one command at a time and waits for it. The hang and signal tests
need many commands at once (each waits for a deadline or a signal) and the pid of each,
to signal it and count what it leaves behind. :class:`Launcher` keeps one server process
that imported torch; each :meth:`Launcher.start` forks a child that becomes what a shell
starts (a session and process group of its own, stdin from ``/dev/null``, stdout and
stderr to files, the environment and ``PYTHONPATH`` given) and runs ``python -m accelhal``
in it. The server waits for its children and reports each exit status.

The plugin :data:`HANGING_PLUGIN` (``acmehang``, priority 950) is a backend whose runtime's
``torch.acmehang.device_count()`` hangs in Python (``ACME_RUNTIME=hang``, the default),
hangs in a C call that keeps the GIL (``gil``), answers after N seconds (``slowN``), or
answers the probes and hangs when the accelerator's own ``device_count()`` calls it
(``later``). It touches ``ACME_MARKER`` (a path) when a call starts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.cli.conftest import Result, clean_env
from tests.distributions import lay_out

RAY_COMMANDS: tuple[tuple[str, ...], ...] = (("ray-resources",),) if importlib.util.find_spec("ray") else ()
"""``accelhal ray-resources`` where Ray is installed. Without Ray (the core sessions) the command refuses before
any device call, with status 2 (:mod:`tests.cli.test_pipes`): no call to hang or to stop."""

SERVER = r"""
import ctypes, json, os, select, signal, sys
import torch  # noqa: F401

ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with the test process

requests, replies = int(sys.argv[1]), int(sys.argv[2])
buffered, running = b"", set()
while True:
    ready, _, _ = select.select([requests], [], [], 0.05)
    if ready:
        data = os.read(requests, 65536)
        if not data:
            break
        buffered += data
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                os.setsid()
                os.close(requests), os.close(replies)
                os.chdir(request["cwd"])
                os.environ.clear()
                os.environ.update(request["env"])
                sys.path[:1] = [request["cwd"], *filter(None, request["env"].get("PYTHONPATH", "").split(os.pathsep))]
                import importlib, runpy
                importlib.invalidate_caches()
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                streams = ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], flags), (2, request["stderr"], flags))
                for fd, path, mode in streams:
                    opened = os.open(path, mode, 0o644)
                    os.dup2(opened, fd)
                    os.close(opened)
                sys.argv = ["accelhal", *request["args"]]
                runpy.run_module("accelhal", run_name="__main__", alter_sys=True)
                sys.exit(0)
            running.add(pid)
            os.write(replies, (json.dumps({"id": request["id"], "pid": pid}) + "\n").encode())
    for pid in list(running):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            running.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            os.write(replies, (json.dumps({"ended": pid, "code": code}) + "\n").encode())
for pid in running:  # the tests are over: what is still running goes (each command leads its own group)
    os.killpg(pid, signal.SIGKILL)
"""

HANGING_PLUGIN = '''
"""A backend whose runtime's device_count() hangs, hangs holding the GIL, or answers late (ACME_RUNTIME)."""
import os
import sys
import time
import types

from accelhal import BackendSpec, hookimpl


def device_count(probing=True):
    mode = os.environ.get("ACME_RUNTIME", "hang")
    if mode == "later":  # the probes' calls answer, the accelerator's hang
        if probing:
            return 1
        mode = "hang"
    if os.environ.get("ACME_MARKER"):
        open(os.environ["ACME_MARKER"], "a").close()
    if mode == "hang":
        while True:
            time.sleep(3600)
    if mode == "gil":  # a C call that keeps the GIL: ctypes.PyDLL does not release it
        import ctypes

        while True:
            ctypes.PyDLL(None).sleep(3600)
    time.sleep(float(mode.removeprefix("slow")))
    return 1


def probe():
    import torch
    from accelhal.contract.probes import probe_device_module

    if "torch.acmehang" not in sys.modules:  # the runtime's device module, as a vendor package registers one
        module = types.ModuleType("torch.acmehang")
        module.device_count = device_count
        torch.acmehang = sys.modules["torch.acmehang"] = module
    return probe_device_module("torch", "torch.acmehang", hint="repair the acme driver")


@hookimpl
def accelhal_register_backends(register):
    register(BackendSpec(name="acmehang", device_type="cpu", priority=950, requires=("torch",), probe=probe,
                         accelerator="acme_hang_class:AcmehangAccelerator",
                         visible_devices_envs=("ACME_VISIBLE_DEVICES",)))
'''

HANGING_CLASS = """
import os

from accelhal_backends.cpu.accelerator import CpuAccelerator


class AcmehangAccelerator(CpuAccelerator):
    _name = "acmehang"
    _visible_devices_envs = ("ACME_VISIBLE_DEVICES",)

    def device_count(self):
        if os.environ.get("ACME_RUNTIME") != "later":
            return super().device_count()
        import torch

        return torch.acmehang.device_count(probing=False)
"""


def install_hanging_plugin(site: Path) -> str:
    """Lay out the ``acme-hang`` distribution in ``site`` as pip would; ``site``, for ``PYTHONPATH``."""
    files = {"acme_hang.py": HANGING_PLUGIN, "acme_hang_class.py": HANGING_CLASS}
    lay_out(site, "acme-hang", entry_points={"accelhal": {"acmehang": "acme_hang"}}, files=files)
    return str(site)


@dataclass
class Command:
    """One started command: its pid (the leader of its own session and process group) and its output files."""

    pid: int
    args: tuple[str, ...]
    stdout: Path
    stderr: Path
    marker: Path

    def result(self, code: int) -> Result:
        return Result(code, self.stdout.read_text(), self.stderr.read_text())


class Launcher:
    """The server, and what it said: each request's pid, each child's exit status."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        request_read, self._requests = os.pipe()
        self._replies, reply_write = os.pipe()
        env = clean_env()
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(request_read), str(reply_write)],
            env=env,
            pass_fds=(request_read, reply_write),
            stdin=subprocess.DEVNULL,
        )
        os.close(request_read)
        os.close(reply_write)
        self._changed = threading.Condition()
        self._pids: dict[int, int] = {}
        self._codes: dict[int, int] = {}
        self.ended_at: dict[int, float] = {}
        """When each child's end was reported (``time.monotonic()``), by pid."""
        self._count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with os.fdopen(self._replies) as replies:
            for line in replies:
                reply = json.loads(line)
                with self._changed:
                    if "pid" in reply:
                        self._pids[reply["id"]] = reply["pid"]
                    else:
                        self._codes[reply["ended"]] = reply["code"]
                        self.ended_at[reply["ended"]] = time.monotonic()
                    self._changed.notify_all()

    def start(self, *args: str, env: Mapping[str, str] | None = None) -> Command:
        """``python -m accelhal ARGS`` with the command tests' clean environment plus ``env``."""
        with self._changed:
            self._count += 1
            number = self._count
        base = self.directory / f"command-{number}"
        marker = Path(f"{base}.marker")
        environment = clean_env({"ACME_MARKER": str(marker), **(env or {})})
        request = {
            "id": number,
            "args": list(args),
            "env": environment,
            "cwd": os.getcwd(),
            "stdout": f"{base}.out",
            "stderr": f"{base}.err",
        }
        os.write(self._requests, (json.dumps(request) + "\n").encode())
        with self._changed:
            self._changed.wait_for(lambda: number in self._pids, timeout=60)
            pid = self._pids[number]
        return Command(pid, args, Path(f"{base}.out"), Path(f"{base}.err"), marker)

    def wait(self, command: Command, timeout: float = 120) -> Result:
        """Wait for ``command`` to end; what it printed and its exit status (negative: the signal that ended it)."""
        with self._changed:
            if not self._changed.wait_for(lambda: command.pid in self._codes, timeout=timeout):
                raise AssertionError(f"accelhal {' '.join(command.args)} did not end within {timeout} s")
            code = self._codes[command.pid]
        return command.result(code)

    def close(self) -> None:
        os.close(self._requests)
        self.proc.wait(timeout=30)


def wait_for(path: Path, timeout: float = 60) -> None:
    """Wait until ``path`` exists (a hanging call has started)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout} s")
        time.sleep(0.05)


def tree(pid: int) -> set[int]:
    """``pid`` and every live descendant of it."""
    try:
        return {pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))}
    except psutil.NoSuchProcess:
        return set()


def left_running(pids: set[int], groups: set[int]) -> list[str]:
    """The live (not zombie) processes among ``pids``, in ``groups`` or whose parent is one of ``pids``."""
    found = []
    for process in psutil.process_iter(["pid", "ppid", "status", "cmdline"]):
        try:
            group = os.getpgid(process.pid)
        except OSError:
            continue
        info = process.info
        if info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if info["pid"] in pids or group in groups or info["ppid"] in pids:
            found.append(f"{info['pid']} (parent {info['ppid']}, group {group}): {' '.join(info['cmdline'] or [])}")
    return found
