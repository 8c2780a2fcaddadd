"""CI's jobs beside and after the README's suite: the nox sessions, as many at a time as the machine has cores.

Run by ``.ci/run`` from the clone's root with the interpreter of a venv that has ``nox[uv]``:

- ``python .ci/jobs.py install`` builds the venv of every job that has one of its own (``nox --install-only``,
  uv from one cache), one after another, while the README's command runs: the README's pip install and its
  suite leave a core idle or wait on the network for most of that time. Each build's outcome is written to
  ``.ci-logs/installs.json``.
- ``python .ci/jobs.py`` then runs every job, two side by side, the longest first, each on one pytest-xdist
  worker (``-n 1``). A job whose venv was built runs in it without installing again (``-R``); one whose build
  failed builds it again itself. The jobs that need exactly the README venv (the adapters' suite at the
  newest end, the slow tests, the torch_npu stack's outer environment) run in it (``--no-venv --no-install``,
  with the README venv first on ``PATH``; the sessions check its pins first).

Each job's output goes to ``.ci-logs/<job>.log`` and is printed whole when the job ends, with its time; then a
table of every job's time and outcome. The exit status is 1 if any job failed.
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
INSTALLS = LOGS / "installs.json"
"""Each built session's ``nox --install-only`` exit status, by session name."""
README_VENV_BIN = ROOT / ".venv" / "bin"
NOX = [str(Path(sys.executable).parent / "nox"), "--default-venv-backend", "uv"]
IN_README_VENV = ("--no-venv", "--no-install")
"""A session run in the README venv: nox builds nothing, and ``python`` is the venv's (``PATH``)."""


@dataclass(frozen=True)
class Job:
    """One nox session and its arguments."""

    session: str
    nox_options: tuple[str, ...] = ()
    pytest_options: tuple[str, ...] = ("-n", "1")

    @property
    def builds_venv(self) -> bool:
        """Whether the session builds a venv of its own (not the README venv)."""
        return self.nox_options != IN_README_VENV

    def command(self, *nox_options: str) -> list[str]:
        """The nox command line of this job, with ``nox_options`` besides its own."""
        return [*NOX, *self.nox_options, *nox_options, "-s", self.session, "--", *self.pytest_options]


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
        Job("vllm(end='newest')"),
        Job(newest_core),
        Job(oldest_core),
        Job("adapters(end='floor')"),
        Job("slow", IN_README_VENV),
        Job("adapters(end='newest')", IN_README_VENV),
        Job("npu(torch_npu='2.13.0')", IN_README_VENV, ()),
        Job("xla", pytest_options=()),
    ]


def environment() -> dict[str, str]:
    """This process's environment with the README venv first on ``PATH`` (the ``--no-venv`` sessions' python)."""
    return {**os.environ, "PATH": f"{README_VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def log_of(job: Job, suffix: str = "") -> Path:
    """The file that ``job``'s output goes to."""
    return LOGS / f"{job.session}{suffix}.log"


@dataclass(frozen=True)
class Outcome:
    """How one nox command ended: its exit status, and the seconds it took on the clock and on the CPU."""

    returncode: int
    seconds: float
    cpu_seconds: float
    """User and system time of the command and every process it waited for (``os.wait4``)."""


def run_nox(job: Job, nox_options: tuple[str, ...], log: Path) -> Outcome:
    """Run ``job``'s nox command with ``nox_options`` besides its own, its output to ``log``."""
    started = time.monotonic()
    with log.open("w") as output:
        process = subprocess.Popen(
            job.command(*nox_options),
            cwd=ROOT,
            env=environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    return Outcome(process.returncode, time.monotonic() - started, usage.ru_utime + usage.ru_stime)


def install() -> int:
    """Build every job's own venv, one after another, the longest job's first; record each outcome. Always 0."""
    LOGS.mkdir(exist_ok=True)
    outcomes: dict[str, int] = {}
    for job in filter(lambda job: job.builds_venv, jobs()):
        outcome = run_nox(job, ("--install-only",), log_of(job, ".install"))
        outcomes[job.session] = outcome.returncode
        print(
            f"built {job.session}: exit {outcome.returncode} in {outcome.seconds:.0f} s"
            f" ({outcome.cpu_seconds:.0f} s of CPU)",
            flush=True,
        )
    INSTALLS.write_text(json.dumps(outcomes))
    return 0


def built() -> dict[str, int]:
    """What :func:`install` recorded; empty if it did not run or did not finish."""
    try:
        return dict(json.loads(INSTALLS.read_text()))
    except (OSError, ValueError):
        return {}


def run(job: Job) -> tuple[Job, Outcome]:
    """Run ``job`` with its output to its log, in its built venv if it has one; print the log whole when it ends."""
    reuse = ("-R",) if built().get(job.session) == 0 else ()
    outcome = run_nox(job, reuse, log_of(job))
    said = "passed" if outcome.returncode == 0 else f"FAILED (exit {outcome.returncode})"
    built_note = " (its venv built beforehand)" if reuse else ""
    print(
        f"\n===== {job.session}: {said} in {outcome.seconds:.0f} s"
        f" ({outcome.cpu_seconds:.0f} s of CPU){built_note} =====",
        flush=True,
    )
    print(log_of(job).read_text(), flush=True)
    return job, outcome


def main() -> int:
    """Run every job, ``os.cpu_count()`` at a time; print the table of times; 1 if any failed."""
    LOGS.mkdir(exist_ok=True)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(run, jobs()))
    print(f"\n{'job':<40} {'seconds':>8} {'CPU s':>8}  outcome")
    for job, outcome in results:
        said = "passed" if outcome.returncode == 0 else "FAILED"
        print(f"{job.session:<40} {outcome.seconds:>8.0f} {outcome.cpu_seconds:>8.0f}  {said}")
    print(f"{'all jobs':<40} {time.monotonic() - started:>8.0f}", flush=True)
    return 1 if any(outcome.returncode for _, outcome in results) else 0


if __name__ == "__main__":
    sys.exit(install() if sys.argv[1:] == ["install"] else main())
