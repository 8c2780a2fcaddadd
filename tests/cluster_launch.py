"""Starting real launchers (torchrun agents, mpirun, simulated srun tasks) from tests, and cleaning up after them.

Every process is started in a session of its own, with a bounded wait; :func:`stop` ends what
is still running (by process id, never by name), and :func:`stop_pids` the workers a record
named (torchrun starts its workers in sessions of their own).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from accelhal.launch.known_launchers import LAUNCHER_VARIABLES

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "distributed_cluster_worker.py"

DROPPED = ("ACCELHAL_", "DS_ACC", "TORCHELASTIC_", "GROUP_", "ROLE_", "SLURM_", "OMPI_", "PMI", "PMIX_", "MPI_")


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**variables: str) -> dict[str, str]:
    """This process's environment without any launcher's variables, on the cpu backend, plus ``variables``.

    ``ACCELHAL_ACCELERATOR=""`` among ``variables`` leaves the backend to selection.
    """
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES and not k.startswith(DROPPED)}
    env.update({"ACCELHAL_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", **variables})
    return env


def start(command: Sequence[str | Path], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``command`` in a session of its own, its output going to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(c) for c in command], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
        )


def wait(processes: Iterable[subprocess.Popen[bytes]], timeout: float) -> list[int | None]:
    """Wait for every process until ``timeout`` seconds in all; the exit codes (``None``: still running)."""
    deadline = time.monotonic() + timeout
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    return codes


def stop(processes: Iterable[subprocess.Popen[bytes]]) -> None:
    """End each process still running and its session: SIGTERM (torchrun stops its workers), then SIGKILL."""
    running = [p for p in processes if p.poll() is None]
    for process in running:
        _signal_group(process.pid, signal.SIGTERM)
        _signal_group(process.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM once it runs again
    wait(running, 10)
    for process in running:
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()


def stop_pids(pids: Iterable[int]) -> None:
    """SIGKILL each of ``pids`` (workers whose records named them) that is still running."""
    for pid in pids:
        _signal_group(pid, signal.SIGKILL, group=False)


def _signal_group(pid: int, number: signal.Signals, *, group: bool = True) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, number) if group else os.kill(pid, number)


def srun_variables(procid: int, *, nodes: int, tasks_per_node: int, nodelist: str, job_id: str) -> dict[str, str]:
    """The variables ``srun -N{nodes} --ntasks-per-node={tasks_per_node}`` sets for task ``procid``.

    As Slurm 23 to 25 set them for a step on all the job's nodes (``nodelist``); block
    distribution (srun's default): tasks fill the first node, then the next.
    """
    node = procid // tasks_per_node
    tasks, counts = nodes * tasks_per_node, f"{tasks_per_node}(x{nodes})"
    gtids = range(node * tasks_per_node, (node + 1) * tasks_per_node)
    return {
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_NAME": "python",
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_NNODES": str(nodes),
        "SLURM_NTASKS": str(tasks),
        "SLURM_NPROCS": str(tasks),
        "SLURM_NTASKS_PER_NODE": str(tasks_per_node),
        "SLURM_TASKS_PER_NODE": counts,
        "SLURM_JOB_CPUS_PER_NODE": counts,
        "SLURM_CPUS_ON_NODE": str(tasks_per_node),
        "SLURM_STEP_ID": "0",
        "SLURM_STEPID": "0",
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_STEP_NUM_NODES": str(nodes),
        "SLURM_STEP_NUM_TASKS": str(tasks),
        "SLURM_STEP_TASKS_PER_NODE": counts,
        "SLURM_DISTRIBUTION": "block",
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": str(procid % tasks_per_node),
        "SLURM_NODEID": str(node),
        "SLURM_GTIDS": ",".join(map(str, gtids)),
        "SLURM_CLUSTER_NAME": "simulated",
        "SLURM_SUBMIT_DIR": str(ROOT),
        "SLURM_PRIO_PROCESS": "0",
        "SLURM_UMASK": "0022",
    }


def records(out: Path, pattern: str) -> list[dict]:
    """The JSON records the workers wrote to ``out`` whose names match ``pattern``, by name."""
    return [json.loads(p.read_text()) for p in sorted(out.glob(pattern))]


@contextmanager
def running(out: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """A list to add started processes to; on leaving, all are stopped, and the workers any record names."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        yield processes
    finally:
        stop(processes)
        stop_pids(r["pid"] for r in records(out, "*.json") if "pid" in r)


def tail(*logs: Path, chars: int = 4000) -> str:
    """The end of each log, for an assertion's message."""
    return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-chars:]}" for log in logs if log.exists())


PYTHON = sys.executable
