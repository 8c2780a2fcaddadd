"""``python -m MODULE ARGS``, a script or ``-c CODE`` in a child forked from a warm interpreter that imported torch.

A fresh ``python -m accelhal info`` spends most of its CPU on ``import torch`` (about 1.5 s
on two cores; the command's own work is a tenth of that), and the command tests start
well over a hundred of them. :func:`run_module` forks each child instead from a server
process, one per pytest worker, that has imported torch and nothing of accelhal or of the
tests. The child then becomes what a fresh
interpreter would be: its environment, its ``sys.path`` (the working directory or the
script's, then ``PYTHONPATH``), its working directory, its arguments, stdin from
``/dev/null``, stdout and stderr to files. It runs the module, script or code as
``__main__`` and exits through the interpreter's own shutdown. What it sees is what a
program that imported torch first sees.

The server freezes what ``import torch`` made (``gc.freeze()``, as Python's documentation
advises before a fork): the child's collections, and its shutdown's, leave those objects
alone. A child that ran ``accelhal info`` took 0.78 s of CPU without it and 0.33 s with it,
most of the difference in the collections that walked torch's objects at shutdown.

The server imports torch under the call's own start-up variables (Python's, torch's, the
loader's, the thread pools'): a call whose variables differ from the last one's starts a new
server. A call gets a fresh interpreter instead where the server cannot stand for one: another
interpreter than this one, a ``PYTHONPATH`` directory holding a module that ``import torch``
or Python's start imports (``torch``, ``numpy``, ``sitecustomize`` ...) or a ``torch.backends``
entry point (torch's device autoload), or another thread of the worker using the server.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

SERVER = r"""
import gc, json, os, sys
import torch  # noqa: F401

gc.freeze()  # torch's objects: never traversed by a child's collections, nor by its shutdown's

requests, replies = os.fdopen(int(sys.argv[1])), os.fdopen(int(sys.argv[2]), "w")
for line in requests:
    request = json.loads(line)
    pid = os.fork()
    if pid:
        replies.write(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])) + "\n")
        replies.flush()
        continue
    requests.close(), replies.close()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:1] = [request["cwd"], *filter(None, request["env"].get("PYTHONPATH", "").split(os.pathsep))]
    import importlib, runpy, signal
    importlib.invalidate_caches()
    streams = ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY), (2, request["stderr"], os.O_WRONLY))
    for fd, path, flags in streams:
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    signal.alarm(request["timeout"])
    if request["module"] is not None:
        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    elif request["script"] is not None:  # python SCRIPT ARGS: the script's directory first on the path
        sys.argv, sys.path[0] = [request["script"], *request["args"]], os.path.dirname(request["script"])
        runpy.run_path(request["script"], run_name="__main__")
    else:  # python -c CODE ARGS: a new __main__, '' first on the path
        sys.argv, sys.path[0] = ["-c", *request["args"]], ""
        main = sys.modules["__main__"] = type(sys)("__main__")
        exec(compile(request["code"], "<string>", "exec"), main.__dict__)
    sys.exit(0)  # leaves the loop: the interpreter's own shutdown (atexit, threads, flushing)
"""

IMPORTED_BY_STARTUP = ("torch", "numpy", "sympy", "typing_extensions", "sitecustomize", "usercustomize")
"""Modules that Python's start or ``import torch`` imports: one on a call's ``PYTHONPATH`` gets a fresh interpreter."""

TORCH_SENSITIVE_PREFIXES = ("PYTHON", "TORCH", "PYTORCH", "LD_", "CUDA", "OMP_", "MKL_", "KMP_", "GOMP_")
"""Variables read while Python starts or torch imports: the server is started with the call's."""


class _Server:
    """The warm interpreter of this process and the lock that serialises its use."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.variables = _startup_variables(env)
        self.lock = threading.Lock()
        request_read, self._requests = os.pipe()
        self._replies, reply_write = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(request_read), str(reply_write)],
            env={k: v for k, v in env.items() if k != "PYTHONPATH"},  # each child sets its own path
            pass_fds=(request_read, reply_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(request_read)
        os.close(reply_write)

    def run(self, request: dict[str, object], timeout: float) -> int | None:
        """The child's exit status (negative: the signal that ended it); ``None`` if the server is gone."""
        if self._requests < 0:
            return None
        try:
            os.write(self._requests, (json.dumps(request) + "\n").encode())
            ready, _, _ = select.select([self._replies], [], [], timeout + 30)
            line = os.read(self._replies, 64) if ready else b""
        except OSError:
            line = b""
        if not line.endswith(b"\n"):
            self.close()
            return None
        return int(line)

    def close(self) -> None:
        """Stop the server (its children are waited for by it, so none is left); a second call does nothing."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._requests, self._replies):
            if fd >= 0:
                os.close(fd)
        self._requests = self._replies = -1


_servers: dict[int, _Server] = {}
"""This process's server, by pid (a forked test process starts its own)."""


@atexit.register
def _close_servers() -> None:
    server = _servers.get(os.getpid())
    if server is not None:
        server.close()


def _startup_variables(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(TORCH_SENSITIVE_PREFIXES) and k != "PYTHONPATH"}


def _server_for(env: Mapping[str, str]) -> _Server | None:
    """This process's server, locked, started afresh if ``env``'s start-up variables are not its own.

    ``None`` while another thread of this process uses it.
    """
    server = _servers.get(os.getpid())
    if server is not None and not server.lock.acquire(blocking=False):
        return None
    if server is None or server.proc.poll() is not None or server.variables != _startup_variables(env):
        if server is not None:
            server.close()
            server.lock.release()
        server = _servers[os.getpid()] = _Server(env)
        server.lock.acquire()
    return server


def _path_changes_torch(env: Mapping[str, str]) -> bool:
    for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
        directory = Path(entry)
        if any((directory / name).exists() or (directory / f"{name}.py").exists() for name in IMPORTED_BY_STARTUP):
            return True
        for points in directory.glob("*.dist-info/entry_points.txt"):
            if "[torch.backends]" in points.read_text(errors="replace"):
                return True
    return False


def run_module(
    module: str, args: list[str], env: Mapping[str, str], python: str, timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m module *args`` with ``env`` in ``cwd``, forked from the warm interpreter where that is the same."""
    what = {"module": module, "script": None, "code": None, "args": args}
    return _run([python, "-m", module, *args], what, env, timeout, cwd)


def run_code(
    code: str, args: list[str], env: Mapping[str, str], python: str, timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` likewise; only for code that does not care whether torch was imported before it."""
    what = {"module": None, "script": None, "code": code, "args": args}
    return _run([python, "-c", code, *args], what, env, timeout, cwd)


def run_script(
    script: Path, args: list[str], env: Mapping[str, str], python: str, timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python script *args`` likewise; only for a script that does not care whether torch was imported before it."""
    what = {"module": None, "script": str(script.resolve()), "code": None, "args": args}
    return _run([python, str(script), *args], what, env, timeout, cwd)


def run_module_on_terminal(module: str, args: list[str], env: Mapping[str, str], terminal: str, timeout: float) -> int:
    """``python -m module *args`` with stdout and stderr on the terminal device ``terminal``; its exit status.

    Forked from the warm interpreter where that is the same as a fresh one, as :func:`run_module`.
    """
    if not _path_changes_torch(env) and (server := _server_for(env)) is not None:
        try:
            what = {"module": module, "script": None, "code": None, "args": args, "env": dict(env)}
            request = {**what, "cwd": os.getcwd(), "timeout": max(1, math.ceil(timeout))}
            code = server.run({**request, "stdout": terminal, "stderr": terminal}, timeout)
        finally:
            server.lock.release()
        if code is not None:
            return code
    with open(terminal, "wb") as out:
        command = [sys.executable, "-m", module, *args]
        proc = subprocess.run(
            command, env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=timeout, check=False
        )
    return proc.returncode


def _run(
    command: list[str], what: Mapping[str, object], env: Mapping[str, str], timeout: float, cwd: Path | None
) -> subprocess.CompletedProcess[str]:
    python = command[0]

    def fresh() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )

    if python != sys.executable or _path_changes_torch(env):
        return fresh()
    server = _server_for(env)
    if server is None:
        return fresh()
    try:
        with tempfile.TemporaryDirectory(prefix="accelhal-warm-") as tmp:
            out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
            out.touch()
            err.touch()
            alarm = max(1, math.ceil(timeout))
            request = {**what, "env": dict(env), "cwd": str(cwd or os.getcwd()), "timeout": alarm}
            code = server.run({**request, "stdout": str(out), "stderr": str(err)}, timeout)
            if code is None:
                return fresh()
            if code == -signal.SIGALRM:  # as subprocess.run says a fresh child ran past its time
                raise subprocess.TimeoutExpired(command, timeout, out.read_text(), err.read_text())
            return subprocess.CompletedProcess(command, code, out.read_text(), err.read_text())
    finally:
        server.lock.release()
