"""CI's jobs after the README's suite: the nox sessions, as many at a time as the machine has cores.

Run by ``.ci/run`` with the README venv's interpreter, from the clone's root: ``python .ci/jobs.py``.
Each job's output goes to ``.ci-logs/<job>.log`` and is printed whole when the job ends, with its
time; then a table of every job's time and outcome. The exit status is 1 if any job failed.

Each job runs its tests on one pytest-xdist worker (``-n 1``), two jobs side by side, the longest first, so
that one job's install overlaps another's tests. Measured in a clean run (docs/contributing.md, "CI"): the jobs
are bound by CPU (the whole run used 6,768 s of CPU on two cores), so side by side saves little beyond the
installs. The jobs that
need exactly the README venv (the adapters' end-to-end runs at the newest end, the torch_npu stack's
outer environment) run in it (``--no-venv --no-install``; the sessions check its pins).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / ".ci-logs"
VENV_BIN = Path(sys.executable).parent
NOX = [str(VENV_BIN / "nox"), "--default-venv-backend", "uv"]
IN_README_VENV = ["--no-venv", "--no-install"]
"""A session run in the README venv: nox builds nothing, and ``python`` is the venv's (``PATH``)."""


@dataclass(frozen=True)
class Job:
    """One nox session and its arguments."""

    session: str
    nox_options: tuple[str, ...] = ()
    pytest_options: tuple[str, ...] = ()

    def command(self) -> list[str]:
        """The nox command line of this job."""
        return [*NOX, *self.nox_options, "-s", self.session, "--", *self.pytest_options]


def core_ends() -> list[str]:
    """The sessions tagged ``core-ends``: the oldest and the newest torch of ``noxfile.CORE_TORCH``, in its order."""
    listed = subprocess.run([*NOX, "-t", "core-ends", "--list", "--json"], capture_output=True, text=True, check=True)
    sessions = [entry["session"] for entry in json.loads(listed.stdout)]
    if len(sessions) != 2:
        raise SystemExit(f"expected two core-ends sessions, got: {sessions}")
    return sessions


def jobs() -> list[Job]:
    """Every job, the longest first."""
    oldest_core, newest_core = core_ends()
    return [
        Job("vllm(end='newest')", pytest_options=("-n", "1")),
        Job(newest_core, pytest_options=("-n", "1")),
        Job(oldest_core, pytest_options=("-n", "1")),
        Job("adapters(end='floor')", pytest_options=("-n", "1")),
        Job("adapters(end='newest')", IN_README_VENV, ("-m", "integration", "-n", "1")),
        Job("npu(torch_npu='2.13.0')", IN_README_VENV),
        Job("xla"),
    ]


def run(job: Job) -> tuple[Job, int, float]:
    """Run ``job`` with its output to its log; print the log whole when it ends."""
    log = LOGS / f"{job.session}.log"
    environment = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.monotonic()
    with log.open("w") as output:
        returncode = subprocess.run(
            job.command(), cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        ).returncode
    seconds = time.monotonic() - started
    outcome = "passed" if returncode == 0 else f"FAILED (exit {returncode})"
    print(f"\n===== {job.session}: {outcome} in {seconds:.0f} s =====\n{log.read_text()}", flush=True)
    return job, returncode, seconds


def main() -> int:
    """Run every job, ``os.cpu_count()`` at a time; print the table of times; 1 if any failed."""
    LOGS.mkdir(exist_ok=True)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(run, jobs()))
    print(f"\n{'job':<40} {'seconds':>8}  outcome")
    for job, returncode, seconds in results:
        print(f"{job.session:<40} {seconds:>8.0f}  {'passed' if returncode == 0 else 'FAILED'}")
    print(f"{'all jobs':<40} {time.monotonic() - started:>8.0f}", flush=True)
    return 1 if any(returncode for _, returncode, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
