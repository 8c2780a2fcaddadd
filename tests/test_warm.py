"""The warm interpreter's children (tests/warm.py) look like fresh interpreters to what they run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import warm

PROBE = """
import json, os, sys
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path": sys.path[:2], "marker": os.environ.get("WARM_MARKER"),
                  "main": __name__, "torch": "torch" in sys.modules}))
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


def _environment(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(site), "WARM_MARKER": "set"}


def test_a_forked_child_sees_what_a_fresh_one_sees_but_torch(tmp_path: Path) -> None:
    env = _environment(tmp_path)
    forked = warm.run_code(PROBE, ["a", "b"], env, sys.executable, timeout=60, cwd=tmp_path)
    fresh = subprocess.run(
        [sys.executable, "-c", PROBE, "a", "b"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (forked.returncode, forked.stderr) == (fresh.returncode, fresh.stderr) == (3, "to stderr\n")
    assert forked.stdout.replace('"torch": true', '"torch": false') == fresh.stdout
    assert '"torch": true' in forked.stdout  # it was forked, not started


def test_a_script_and_a_module_get_their_own_first_path_entry(tmp_path: Path) -> None:
    script = tmp_path / "probe_script.py"
    script.write_text(PROBE)
    env = _environment(tmp_path)
    run = warm.run_script(script, ["x"], env, sys.executable, timeout=60, cwd=tmp_path.parent)
    assert run.returncode == 3 and f'"argv": ["{script}", "x"]' in run.stdout
    assert f'"path": ["{tmp_path}", "{tmp_path / "site"}"]' in run.stdout


def test_a_server_starts_under_the_calls_variables_and_a_shadowed_numpy_is_a_fresh_interpreter(
    tmp_path: Path,
) -> None:
    seeded = "import sys; print('torch' in sys.modules, hash('accelhal'))"  # PYTHONHASHSEED is read at start-up
    for seed in ("1", "2"):  # a new server for each
        env = {**_environment(tmp_path), "PYTHONHASHSEED": seed}
        forked = warm.run_code(seeded, [], env, sys.executable, timeout=60).stdout.split()
        fresh = subprocess.run([sys.executable, "-c", seeded], env=env, capture_output=True, text=True, timeout=60)
        assert forked == ["True", fresh.stdout.split()[1]] and fresh.stdout.split()[0] == "False"
    (tmp_path / "site" / "numpy.py").write_text("")
    run = warm.run_code(PROBE, [], _environment(tmp_path), sys.executable, timeout=60)
    assert '"torch": false' in run.stdout


def test_a_child_past_its_time_is_a_timeout_as_for_a_fresh_one(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        warm.run_code("import time; time.sleep(30)", [], _environment(tmp_path), sys.executable, timeout=1)
