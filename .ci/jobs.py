"""CI's jobs beside and after the README's suite: the nox sessions, as many at a time as the machine has cores.

Run by ``.ci/run`` from the clone's root, in the background, before the README's command starts, with the
interpreter of a venv that has ``nox[uv]``:

- A thread builds the venv of every job that has one of its own (``nox --install-only``), one after another,
  while the README's command runs: its pip install and its suite leave CPU idle for most of that time. Each build
  has a uv cache of its own, deleted once the venv is built (the venv keeps its files as hard links), and each
  venv is deleted when its job ends, so that a venv's disk comes back with its job.
- Before a build the thread waits for room: while the disk has less free than the job's venv takes
  (:attr:`Job.venv_gib`) and :data:`RESERVE_GIB` for the tests, and a built venv is still to be freed by its
  job's end. A disk too small even then is named in the log, and the build goes ahead.
- The jobs start once ``.ci/run`` says the README's command passed (:data:`README_PASSED`), as many at a time as
  the machine has cores, the longest first, each on one pytest-xdist worker (``-n 1``). A job whose venv was
  built runs in it without installing again (``-R``); one whose build failed builds it again itself. The jobs
  that need exactly the README venv (the adapters' suite at the newest end, the torch_npu stack's outer
  environment) run in it (``--no-venv --no-install``, with the README venv first on ``PATH``; the
  sessions check its pins first).

No job runs beside the README's suite: Linux shares the CPU equally between sessions (autogroups), whatever
their ``nice``, and the tests start sessions of their own, so a job there took half the suite's CPU (measured:
the suite 371 s instead of 209 s with the vLLM job at ``nice 10`` beside it).

Each job's output goes to ``.ci-logs/<job>.log`` and is printed whole when the job ends, with its time and its
CPU time; then a table of every job's. The exit status is 1 if any job failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / ".ci-logs"
README_PASSED = LOGS / "readme-passed"
"""Written by ``.ci/run`` once the README's command has passed: the other jobs may start."""
README_VENV_BIN = ROOT / ".venv" / "bin"
NOX = [str(Path(sys.executable).parent / "nox"), "--default-venv-backend", "uv"]
IN_README_VENV = ("--no-venv", "--no-install")
"""A session run in the README venv: nox builds nothing, and ``python`` is the venv's (``PATH``)."""
POLL_SECONDS = 1.0
"""How often the runner looks for :data:`README_PASSED`."""
ENVDIRS = ROOT / ".nox"
"""Each job's venvs lie in a folder of their own below this (``nox --envdir``), deleted when the job ends."""
UV_CACHES = Path(os.environ.get("UV_CACHE_DIR") or ROOT / ".ci-cache" / "uv")
"""Each job's uv cache lies in a folder of its own below this, deleted once its venv is built."""
RESERVE_GIB = 4.0
"""Disk the running tests write besides the venvs (the kept test venvs, wheels, the test device's build)."""
GIB = 1024**3


@dataclass(frozen=True)
class Job:
    """One nox session and its arguments."""

    session: str
    venv_gib: float = 0.0
    """The disk its venv takes, rounded up from a clean run's (docs/contributing.md, "CI"); 0 in the README venv."""
    nox_options: tuple[str, ...] = ()
    pytest_options: tuple[str, ...] = ("-n", "1", "--durations=25")

    @property
    def builds_venv(self) -> bool:
        """Whether the session builds a venv of its own (not the README venv)."""
        return self.nox_options != IN_README_VENV

    @property
    def folder_name(self) -> str:
        """The session's name as a folder's: ``"core(torch='2.4.1')"`` -> ``"core-torch-2.4.1"``."""
        return re.sub(r"[^\w.]+", "-", self.session).strip("-")

    @property
    def envdir(self) -> Path:
        """The folder of this job's venv (``nox --envdir``)."""
        return ENVDIRS / self.folder_name

    @property
    def uv_cache(self) -> Path:
        """This job's own uv cache."""
        return UV_CACHES / self.folder_name

    def command(self, *nox_options: str) -> list[str]:
        """The nox command line of this job, with ``nox_options`` besides its own."""
        own = () if not self.builds_venv else ("--envdir", str(self.envdir))
        return [*NOX, *self.nox_options, *own, *nox_options, "-s", self.session, "--", *self.pytest_options]


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
        Job("sglang(end='newest')", 11.0),
        Job("vllm(end='newest')", 4.0),
        Job(newest_core, 6.0),
        Job(oldest_core, 6.0),
        Job("adapters(end='floor')", 6.5),
        Job("adapters(end='newest')", nox_options=IN_README_VENV),
        Job("npu(torch_npu='2.13.0')", nox_options=IN_README_VENV, pytest_options=("--durations=25",)),
        Job("xla", 7.5, pytest_options=("--durations=25",)),
    ]


def environment(job: Job) -> dict[str, str]:
    """This process's environment for ``job``: its own uv cache, and the README venv first on ``PATH``.

    The README venv's ``python`` is the ``--no-venv`` sessions'.
    """
    path = f"{README_VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "UV_CACHE_DIR": str(job.uv_cache)}


def free_gib() -> float:
    """The disk free for the clone, in GiB."""
    return shutil.disk_usage(ROOT).free / GIB


def size_gib(folder: Path) -> float:
    """The disk the files below ``folder`` take, in GiB (a file linked twice below it counted once)."""
    seen: set[tuple[int, int]] = set()
    blocks = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            stat = os.lstat(os.path.join(parent, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                blocks += stat.st_blocks
    return blocks * 512 / GIB


def log_of(job: Job, suffix: str = "") -> Path:
    """The file that ``job``'s output goes to."""
    return LOGS / f"{job.session}{suffix}.log"


@dataclass(frozen=True)
class Outcome:
    """How one nox command ended: its exit status, and the seconds it took on the clock and on the CPU."""

    returncode: int
    started: float
    """Seconds from the runner's start to the command's."""
    seconds: float
    cpu_seconds: float
    """User and system time of the command and every process it waited for (``os.wait4``)."""


STARTED = time.monotonic()
"""When the runner started: :attr:`Outcome.started` counts from here."""
PRINTING = threading.Lock()
"""Held while one job's log is printed whole, so that two jobs' logs never interleave."""


def say(text: str) -> None:
    """Print ``text`` whole, never interleaved with another thread's."""
    with PRINTING:
        print(text, flush=True)


def run_nox(job: Job, nox_options: tuple[str, ...], log: Path) -> Outcome:
    """Run ``job``'s nox command with ``nox_options`` besides its own, its output to ``log``."""
    started = time.monotonic()
    with log.open("w") as output:
        process = subprocess.Popen(
            job.command(*nox_options),
            cwd=ROOT,
            env=environment(job),
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    cpu_seconds = usage.ru_utime + usage.ru_stime
    return Outcome(process.returncode, started - STARTED, time.monotonic() - started, cpu_seconds)


class Room:
    """The disk for the jobs' venvs: a build waits while it lacks room and a built venv is still to be freed.

    A venv is *held* from its build until its job ends (:meth:`free`, which deletes it).
    """

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._changed = threading.Condition()

    def wait_for(self, job: Job) -> None:
        """Return once the disk has ``job.venv_gib`` and :data:`RESERVE_GIB` free, or no held venv is left to free."""
        needed = job.venv_gib + RESERVE_GIB
        with self._changed:
            if free_gib() < needed and self._held:
                say(f"{job.session} waits to build: {free_gib():.1f} GiB free, it needs {needed:.1f}")
            while free_gib() < needed and self._held:
                self._changed.wait()
        if free_gib() < needed:
            say(f"{job.session} builds with {free_gib():.1f} GiB free, short of {needed:.1f}: no venv is left to free")

    def hold(self, job: Job) -> None:
        """Count ``job``'s venv, just built, among those whose job's end frees disk."""
        with self._changed:
            self._held.add(job.session)

    def free(self, job: Job) -> None:
        """Delete ``job``'s venv and uv cache, its job having ended; a build waiting for room looks again."""
        shutil.rmtree(job.envdir, ignore_errors=True)
        shutil.rmtree(job.uv_cache, ignore_errors=True)
        with self._changed:
            self._held.discard(job.session)
            self._changed.notify_all()


class Builds:
    """The jobs' own venvs: built one after another in a thread of their own, each once the disk has room for it.

    Each is deleted when its job ends (:meth:`free`).
    """

    def __init__(self, every: list[Job]) -> None:
        self._order = [job for job in every if job.builds_venv]
        self._built = {job.session: threading.Event() for job in self._order}
        self._returncodes: dict[str, int] = {}
        self._room = Room()
        self._thread = threading.Thread(target=self._build_all, name="builds", daemon=True)

    def start(self) -> None:
        """Start building, in the background."""
        self._thread.start()

    def _build_all(self) -> None:
        for job in self._order:
            self._room.wait_for(job)
            outcome = run_nox(job, ("--install-only",), log_of(job, ".install"))
            shutil.rmtree(job.uv_cache, ignore_errors=True)
            self._room.hold(job)
            self._returncodes[job.session] = outcome.returncode
            self._built[job.session].set()
            say(
                f"built {job.session}: exit {outcome.returncode} in {outcome.seconds:.0f} s"
                f" ({outcome.cpu_seconds:.0f} s of CPU), {outcome.started + outcome.seconds:.0f} s in;"
                f" {size_gib(job.envdir):.1f} GiB, {free_gib():.1f} GiB left free"
            )

    def reuse(self, job: Job) -> tuple[str, ...]:
        """Wait for ``job``'s venv; ``("-R",)`` where it was built, none where it failed (the job builds it)."""
        if not job.builds_venv:
            return ()
        self._built[job.session].wait()
        return ("-R",) if self._returncodes[job.session] == 0 else ()

    def free(self, job: Job) -> None:
        """Give back ``job``'s venv, its job having ended (none for a job in the README venv)."""
        if job.builds_venv:
            self._room.free(job)


def run(job: Job, builds: Builds) -> tuple[Job, Outcome]:
    """Run ``job`` with its output to its log, in its built venv if it has one; print the log whole when it ends."""
    reuse = builds.reuse(job)
    outcome = run_nox(job, reuse, log_of(job))
    builds.free(job)
    said = "passed" if outcome.returncode == 0 else f"FAILED (exit {outcome.returncode})"
    built_note = "; its venv built beforehand" if reuse else ""
    say(
        f"\n===== {job.session}: {said} in {outcome.seconds:.0f} s ({outcome.cpu_seconds:.0f} s of CPU),"
        f" from {outcome.started:.0f} s{built_note} =====\n" + log_of(job).read_text()
    )
    return job, outcome


def wait_for_the_readme_command() -> None:
    """Return once ``.ci/run`` has written :data:`README_PASSED`; exit if ``.ci/run`` has ended without it.

    ``.ci/run`` ends this runner's process group where the README's command fails; a ``.ci/run`` killed outright
    leaves it an orphan, which ends here.
    """
    parent = os.getppid()
    while not README_PASSED.exists():
        if os.getppid() != parent:
            raise SystemExit(".ci/run ended before the README's command passed")
        time.sleep(POLL_SECONDS)
    say(f"the README's command passed; the other jobs start, {time.monotonic() - STARTED:.0f} s in")


def main() -> int:
    """Run every job as the module says; print the table of times; 1 if any failed."""
    LOGS.mkdir(exist_ok=True)
    every = jobs()
    builds = Builds(every)
    builds.start()
    wait_for_the_readme_command()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda job: run(job, builds), every))
    say(f"\n{'job':<40} {'from s':>7} {'seconds':>8} {'CPU s':>7}  outcome")
    for job, outcome in results:
        said = "passed" if outcome.returncode == 0 else "FAILED"
        say(f"{job.session:<40} {outcome.started:>7.0f} {outcome.seconds:>8.0f} {outcome.cpu_seconds:>7.0f}  {said}")
    say(f"{'all jobs':<40} {'':>7} {time.monotonic() - STARTED:>8.0f}")
    return 1 if any(outcome.returncode for _, outcome in results) else 0


if __name__ == "__main__":
    os.setpgid(0, 0)  # a process group of its own, in .ci/run's session: .ci/run's cleanup ends the group
    sys.exit(main())
