"""A real Ray cluster of ``ray start`` nodes on this host, and its teardown that touches nothing else.

Each node is one ``ray start`` run in a session of its own (``start_new_session``): every
process the node starts (GCS, raylet, agents and the workers, which take a process group of
their own but stay in the session) carries that session id, and :meth:`LocalCluster.stop`
kills exactly those (and, should one have left the session, any process naming the cluster's
directory). ``ray stop`` is never used: it kills every Ray process of the machine
by name, other clusters included. Every port is chosen free, the temporary directory is
unique and short (Ray's Unix sockets live under it), so clusters of parallel test processes
do not meet.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import psutil

OBJECT_STORE_BYTES = 100_000_000
"""Ray's smallest object store (``--object-store-memory``): the tests move no data through it."""


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ray_command() -> list[str]:
    """Ray's command line program, run by this interpreter."""
    return [sys.executable, "-m", "ray.scripts.scripts"]


class LocalCluster:
    """Nodes started with ``ray start`` under one temporary directory; :meth:`stop` removes them all."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ahray", dir="/tmp" if Path("/tmp").is_dir() else None))
        self.sessions: list[int] = []
        self.address = ""
        self.logs: list[Path] = []

    def _ports(self) -> list[str]:
        """Every port option of a node, each free (the defaults are fixed numbers two nodes would share)."""
        options = ("dashboard-agent-listen-port", "dashboard-agent-grpc-port", "metrics-export-port")
        return [f"--{name}={free_port()}" for name in (*options, "runtime-env-agent-port")]

    def _start(self, name: str, options: Sequence[str], env: Mapping[str, str], timeout: float) -> str:
        log = self.root / f"{name}.log"
        self.logs.append(log)
        command = [*ray_command(), "start", *options, *self._ports()]
        command += [
            "--node-ip-address=127.0.0.1",
            "--disable-usage-stats",
            f"--temp-dir={self.root}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
        ]
        with open(log, "w") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=dict(env), start_new_session=True
            )
            self.sessions.append(process.pid)
            try:
                status = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                status = None
        text = log.read_text()
        if status != 0:
            raise RuntimeError(f"ray start ({name}) ended with {status}: {' '.join(command)}\n{text[-4000:]}")
        return text

    def start_head(self, options: Sequence[str], env: Mapping[str, str], timeout: float = 120) -> str:
        """Start the head node with ``options`` (``--num-cpus=2``, ...); returns the GCS address."""
        port = free_port()
        head = ["--head", f"--port={port}", f"--dashboard-port={free_port()}", "--include-dashboard=false"]
        text = self._start("head", [*head, *options], env, timeout)
        found = re.search(r"ray start --address='([^']+)'", text)
        self.address = found.group(1) if found else f"127.0.0.1:{port}"
        return self.address

    def add_node(self, options: Sequence[str], env: Mapping[str, str], timeout: float = 120) -> None:
        """Start a node that joins the head, with ``options`` (its resources)."""
        self._start(f"node{len(self.sessions)}", [f"--address={self.address}", *options], env, timeout)

    def processes(self) -> list[int]:
        """The pids of every process in the nodes' sessions, or naming the cluster's directory."""
        found = []
        root = str(self.root)
        for process in psutil.process_iter(["pid", "cmdline"]):
            with contextlib.suppress(OSError, psutil.Error):
                if os.getsid(process.pid) in self.sessions or any(root in arg for arg in process.info["cmdline"] or ()):
                    found.append(process.pid)
        return found

    def stop(self) -> None:
        """Kill every process of the nodes' sessions, then remove the directory."""
        for _ in range(20):
            alive = self.processes()
            if not alive:
                break
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def local_cluster() -> Iterator[LocalCluster]:
    """A :class:`LocalCluster`, stopped however the block ends."""
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.stop()
