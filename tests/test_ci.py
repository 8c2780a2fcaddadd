"""CI's frame: ``.ci/run`` runs exactly the README's test command, and every CI job has its row in the docs."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_test_command() -> str:
    """The command of the README's block that runs the tests."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    (command,) = [block for block in blocks if "pytest" in block]
    return command


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_test_command() in lines


def core_ends() -> list[str]:
    """The sessions ``nox -t core-ends`` lists: the first and last torch of ``noxfile.CORE_TORCH``."""
    (line,) = [line for line in (ROOT / "noxfile.py").read_text().splitlines() if line.startswith("CORE_TORCH = ")]
    releases = ast.literal_eval(line.split("=", 1)[1].strip())
    return [f"core(torch='{releases[0]}')", f"core(torch='{releases[-1]}')"]


def test_every_ci_job_has_its_row_in_the_contributing_table() -> None:
    sessions = re.findall(r'Job\("([^"]+)"', (ROOT / ".ci" / "jobs.py").read_text())
    assert "xla" in sessions and "vllm(end='newest')" in sessions
    table = (ROOT / "docs" / "contributing.md").read_text().split("\n## CI\n", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    for session in [*sessions, *core_ends()]:
        assert any(f"`{session}`" in row for row in rows), f"docs/contributing.md's CI table has no row for {session}"


def noxfile_list(name: str) -> list[str]:
    """The list ``noxfile.py`` assigns to ``name`` (read, not imported: the README venv has no nox)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    ]
    listed: list[str] = ast.literal_eval(value)
    return listed


COLLECT = """
import json, sys, pytest

class Collected:
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]

found = {}
for name, options in json.loads(sys.argv[1]).items():
    collected = Collected()
    pytest.main(["--co", "-q", "-p", "no:cacheprovider", *options], plugins=[collected])
    found[name] = collected.ids
print("COLLECTED " + json.dumps(found))
"""


@pytest.mark.slow
def test_the_readme_suite_and_the_jobs_tiers_share_no_test_and_leave_out_only_the_heavy_one() -> None:
    """Every test is in exactly one of: the README's suite, ``slow``, the adapters' sessions; ``heavy`` in none.

    CI runs the ``slow`` tier in the core suite at both ends (``core-ends``): that suite is the README's and ``slow``.
    """
    selections = {
        "readme": [],
        "slow": noxfile_list("SLOW_SUITE"),
        "adapters": noxfile_list("ADAPTER_SUITE"),
        "heavy": ["-m", "heavy"],
        "all": ["-m", "heavy or not heavy"],
        "core": noxfile_list("CORE_SUITE"),
    }
    done = subprocess.run(
        [sys.executable, "-c", COLLECT, json.dumps(selections)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("COLLECTED ")]
    found = {name: set(ids) for name, ids in json.loads(line.split(" ", 1)[1]).items()}
    everything, core = found.pop("all"), found.pop("core")
    assert core == found["readme"] | found["slow"], sorted(core ^ (found["readme"] | found["slow"]))[:5]
    assert len(everything) > 1000 and len(found["heavy"]) == 1
    for one, other in itertools.combinations(found, 2):
        assert not found[one] & found[other], f"in both {one} and {other}: {sorted(found[one] & found[other])[:5]}"
    assert set().union(*found.values()) == everything, sorted(everything - set().union(*found.values()))[:5]


CLEANUP_RUN = """
set -euo pipefail
{cleanup}
runner=
"{python}" -c "{own_group}" '{runner}' < /dev/null > /dev/null 2>&1 &
runner=$!
echo "runner $runner"
{before}
trap cleanup EXIT
{last}
"""


OWN_GROUP = "import os, sys; os.setpgid(0, 0); os.execvp('bash', ['bash', '-c', sys.argv[1]])"
"""The runner's start as ``.ci/jobs.py`` makes it: a process group of its own, in the script's session."""


def run_with_cleanup(tmp_path: Path, runner: str, before: str, last: str) -> subprocess.CompletedProcess[str]:
    """A script with ``.ci/run``'s own ``cleanup()``: a runner in its own session, then ``last`` under the trap."""
    script = (ROOT / ".ci" / "run").read_text()
    cleanup = re.search(r"^cleanup\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert cleanup, ".ci/run defines no cleanup() function"
    body = CLEANUP_RUN.format(
        cleanup=cleanup.group(0).replace('"$CACHE"', '"$PWD/cache"'),
        python=sys.executable,
        own_group=OWN_GROUP,
        runner=runner,
        before=before,
        last=last,
    )
    return subprocess.run(["bash", "-c", body], capture_output=True, text=True, timeout=30, cwd=tmp_path)


@pytest.mark.parametrize(("last", "status"), [("true", 0), ("exit 3", 3)])
def test_ci_run_exits_with_its_own_status_after_its_cleanup(last: str, status: int, tmp_path: Path) -> None:
    """``.ci/run``'s exit trap keeps the run's status where the runner has ended already (its kill fails)."""
    done = run_with_cleanup(tmp_path, "true", 'wait "$runner"', last)
    assert done.returncode == status, done.stderr


def test_a_failed_ci_run_ends_the_runner_and_every_process_it_started(tmp_path: Path) -> None:
    """A run that fails while the runner works (the README's command failed) leaves none of its processes."""
    started = "while [ ! -e started ]; do sleep 0.05; done"
    done = run_with_cleanup(tmp_path, "sleep 300 & touch started; sleep 300", started, "exit 4")
    assert done.returncode == 4, done.stderr
    (group,) = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("runner ")]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the runner's process group {group} is still alive after the run ended")


def ci_jobs(envdirs: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh copy of ``.ci/jobs.py`` (the runner), its jobs' venvs and uv caches under ``envdirs``."""
    spec = importlib.util.spec_from_file_location("ci_jobs", ROOT / ".ci" / "jobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    module.ENVDIRS, module.UV_CACHES = envdirs / "venvs", envdirs / "uv"
    return module


def test_a_build_short_of_disk_waits_until_the_held_venvs_are_freed_then_goes_ahead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's disk gate: a build that no disk has room for waits for a held venv's job, then builds anyway."""
    jobs = ci_jobs(tmp_path, monkeypatch)
    room = jobs.Room()
    held, huge = jobs.Job("held(end='x')", 1.0), jobs.Job("huge", 1e9)
    (held.envdir / "bin").mkdir(parents=True)
    room.hold(held)
    waiting = threading.Thread(target=room.wait_for, args=(huge,), daemon=True)  # a gate that hangs fails, not hangs
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive(), "the build did not wait for the held venv"
    room.free(held)
    waiting.join(10)
    assert not waiting.is_alive(), "freeing the held venv did not let the build go ahead"
    assert not held.envdir.exists()
    said = capsys.readouterr().out
    assert "huge waits to build" in said and "no venv is left to free" in said, said


def test_a_build_with_room_does_not_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that needs no more than the disk has free goes ahead while other venvs are held."""
    jobs = ci_jobs(tmp_path, monkeypatch)
    jobs.RESERVE_GIB = 0.0  # a build that needs nothing: any disk has room for it
    room = jobs.Room()
    room.hold(jobs.Job("held", 1.0))
    building = threading.Thread(target=room.wait_for, args=(jobs.Job("small", 0.0),), daemon=True)
    building.start()
    building.join(10)
    assert not building.is_alive(), "a build with room waited for the held venv"
    assert capsys.readouterr().out == ""
