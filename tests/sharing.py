"""What a test run builds once and shares between its pytest-xdist workers; free ports.

Under pytest-xdist each worker is a process with its own session, so a ``scope="session"``
fixture runs once per worker. An expensive artefact (a wheel, a virtual environment, a
compiled extension) is built instead through :class:`RunCache`: the first worker to ask
builds it under a cross-process lock, the others wait and reuse it. The fixtures of
``tests/conftest.py`` hand it out (``run_cache``, ``accelhal_wheel``)::

    @pytest.fixture(scope="module")
    def plugin_venv(run_cache: RunCache, accelhal_wheel: Path) -> Path:
        def build(directory: Path) -> None:
            python = fresh_venv(directory / "venv")
            pip_install(python, accelhal_wheel, run_cache.wheel(PLUGIN_SOURCE))
        return run_cache.directory("plugin-venv", build) / "venv" / "bin" / "python"

An artefact that is worth keeping between runs (its inputs change rarely) is kept under
``~/.cache/accelhal-tests`` keyed by a hash of its inputs instead, with the same lock
(:func:`tests.venvs.vendor_venv`, :mod:`tests.privateuse1.device`).

:func:`free_port` hands out a TCP port no other test of any run on this machine was given
in the last minutes (for ``MASTER_PORT``, a rendezvous, a server).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.locks import locked

_FINISHED = ".finished"
PORTS_FILE = Path(tempfile.gettempdir()) / f"accelhal-test-ports-{os.getuid()}.json"
"""The ports :func:`free_port` handed out recently, shared by every test process on this machine."""
PORT_RESERVATION_SECONDS = 600.0
"""How long a port handed out by :func:`free_port` is not handed out again."""


def run_directory(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    """The temporary directory of the whole run: ``basetemp``, the parent of each xdist worker's own."""
    base = factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


class RunCache:
    """Directories built once per test run, by whichever worker asks first; the others wait and reuse them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def directory(self, name: str, build: Callable[[Path], object]) -> Path:
        """``<root>/<name>``, filled by ``build(directory)`` the first time any worker of the run asks for it.

        The build runs under a lock (other workers asking meanwhile wait for it); a marker
        written after it returns says it finished, so a build that raised is done afresh by
        the next caller rather than half reused.
        """
        directory = self.root / name
        if (directory / _FINISHED).is_file():
            return directory
        with locked(directory):
            if not (directory / _FINISHED).is_file():
                shutil.rmtree(directory, ignore_errors=True)
                directory.mkdir(parents=True)
                build(directory)
                (directory / _FINISHED).touch()
        return directory

    def wheel(self, source: Path) -> Path:
        """The wheel of the project at ``source`` (``pip wheel``, no network), built once per run."""
        from tests.venvs import build_wheel

        digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
        directory = self.directory(f"wheel-{source.name}-{digest}", lambda out: build_wheel(source, out))
        (wheel,) = directory.glob("*.whl")
        return wheel


def free_port() -> int:
    """A free TCP port on 127.0.0.1 that no test process on this machine was handed in the last ten minutes.

    The kernel's choice (binding port 0) is free now; the reservation keeps two tests that
    run at once (two xdist workers, two test runs) from being given the same one before
    either binds it.
    """
    with locked(PORTS_FILE):
        now = time.time()
        try:
            handed: dict[str, float] = json.loads(PORTS_FILE.read_text())
        except (OSError, ValueError):
            handed = {}
        handed = {port: when for port, when in handed.items() if now - when < PORT_RESERVATION_SECONDS}
        for _ in range(100):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port: int = sock.getsockname()[1]
            if str(port) not in handed:
                break
        handed[str(port)] = now
        PORTS_FILE.write_text(json.dumps(handed))
    return port
