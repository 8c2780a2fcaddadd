"""``accelhal doctor`` names the plugin that ends or hangs the process, says how to block it, and loses nothing else.

The plugins are real distributions; ``acmegood`` (priority 950) must stay the active
backend in every report, and the block doctor proposes must be one that works.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.cli.test_doctor import problems
from tests.plugin_sources import backend_plugin

GOOD = backend_plugin("acmegood", priority=950)
CRASH = "import os\nos._exit(7)\n"
HANG = "import time\ntime.sleep(3600)\n"
SEGFAULT = backend_plugin("acmesegv", priority=990, probe_body="import ctypes; ctypes.string_at(0)")
STEP_LIMIT = "5"  # seconds a plugin step may take in doctor's child before it is called hung


@pytest.fixture
def site(install_distribution: Callable[..., Path]) -> Callable[..., str]:
    def install(**plugins: str) -> str:
        dist_info = install_distribution("acme-good", {"acme_good": GOOD}, {"acmegood": "acme_good"})
        for name, source in plugins.items():
            install_distribution(f"acme-{name}", {f"acme_{name}": source}, {f"acme{name}": f"acme_{name}"})
        return str(dist_info.parent)

    return install


def test_a_plugin_that_ends_the_process_and_one_that_hangs_are_both_named(site: Callable[..., str]) -> None:
    env = {"PYTHONPATH": site(crash=CRASH, hang=HANG), "ACCELHAL_DOCTOR_TIMEOUT": STEP_LIMIT}
    result = run_accelhal("doctor", "--json", env=env)
    assert result.returncode == 1, result.output
    data = result.json()
    assert data["active"] == "acmegood"  # the rest of the report ran with both blocked
    found = problems(result)
    crashed, hung = found["plugin-crashed"], found["plugin-hung"]
    assert crashed["title"] == "plugin 'acmecrash' ends the process while being imported"
    assert "acme-crash 1.0" in crashed["detail"] and "exit status 7" in crashed["detail"]
    assert hung["title"] == "plugin 'acmehang' hangs while being imported"
    assert f"got no further in {STEP_LIMIT} s (ACCELHAL_DOCTOR_TIMEOUT)" in hung["detail"]
    for problem in (crashed, hung):
        assert "export ACCELHAL_BLOCK_PLUGINS=acmecrash,acmehang" in problem["fix"]
    fixed = run_accelhal("list", "--json", env={**env, "ACCELHAL_BLOCK_PLUGINS": "acmecrash,acmehang"})
    assert fixed.returncode == 0 and fixed.json()["chosen"] == "acmegood"  # the proposed block works


def test_a_probe_that_crashes_natively_is_named_with_its_backend(site: Callable[..., str]) -> None:
    env = {"PYTHONPATH": site(segv=SEGFAULT), "ACCELHAL_BLOCK_PLUGINS": "cuda"}
    result = run_accelhal("doctor", env=env)
    assert result.returncode == 1, result.output
    text = " ".join(result.stdout.split())
    assert "plugin 'acmesegv' ends the process while probing backend 'acmesegv' [plugin-crashed]" in text
    assert "signal SIGSEGV" in text
    assert "export ACCELHAL_BLOCK_PLUGINS=cuda,acmesegv" in text  # the user's own list is kept
    assert "active backend: acmegood" in text


SLOW_IMPORT = "import time\ntime.sleep(0.5)\n" + backend_plugin("acmeslow", priority=60)
SLOW_PROBE = backend_plugin(
    "acmeprobe", priority=70, probe_body="import time; time.sleep(0.5); return Verdict.no_device('x')"
)


def test_a_slow_plugin_and_a_slow_probe_are_warnings(site: Callable[..., str]) -> None:
    env = {"PYTHONPATH": site(slow=SLOW_IMPORT, probe=SLOW_PROBE), "ACCELHAL_SLOW_PLUGIN_SECONDS": "0.25"}
    result = run_accelhal("doctor", "--json", env=env)
    assert result.returncode == 0, result.output  # warnings only
    data = result.json()
    assert data["healthy"] is True and data["active"] == "acmegood"
    titles = {p["title"].split(" takes ")[0]: p for p in data["problems"] if p["code"] == "plugin-slow"}
    assert set(titles) == {"plugin 'acmeslow'", "backend 'acmeprobe'"}, data["problems"]
    assert all(p["severity"] == "warning" for p in titles.values())
    assert "ACCELHAL_SLOW_PLUGIN_SECONDS=0.25" in titles["plugin 'acmeslow'"]["detail"]
    human = run_accelhal("doctor", env=env)
    assert human.returncode == 0
    assert "warning: plugin 'acmeslow' takes" in human.stdout
    assert "No problems found (2 warnings, 1 notice)." in human.stdout  # acmeprobe sees no device: a notice


def test_a_local_rank_the_backends_reject_is_a_problem() -> None:
    result = run_accelhal("doctor", "--json", env={"LOCAL_RANK": "abc"})
    assert result.returncode == 1
    found = problems(result)
    assert "LOCAL_RANK" in found["bad-variable"]["title"] and "'abc'" in found["bad-variable"]["detail"]


FROM_A_FRESH_INTERPRETER = "import sys; from accelhal.cli import main; sys.argv[0] = 'accelhal'; sys.exit(main())"
"""``accelhal ARGS`` as a fresh interpreter runs it: torch not imported, so doctor's discovery child is started."""


def test_the_forked_child_names_the_same_faults_as_the_started_one(site: Callable[..., str]) -> None:
    """Where torch was imported before (here, the warm interpreter), the child is forked; the findings are the same."""
    env = {
        "PYTHONPATH": site(crash=CRASH, hang=HANG, segv=SEGFAULT),
        "ACCELHAL_DOCTOR_TIMEOUT": STEP_LIMIT,
        "ACCELHAL_BLOCK_PLUGINS": "cuda",
    }
    forked = run_accelhal("doctor", "--json", env=env)
    started = run_accelhal("doctor", "--json", env=env, code=FROM_A_FRESH_INTERPRETER)

    def findings(result: Result) -> list[tuple[str, str, str]]:
        problems(result)  # no traceback, and the exit status is the report's
        return sorted((p["code"], p["title"], p["fix"]) for p in result.json()["problems"])

    assert forked.returncode == started.returncode == 1, (forked.output, started.output)
    assert forked.json()["active"] == started.json()["active"] == "acmegood"
    assert findings(forked) == findings(started)
    assert {code for code, _, _ in findings(forked)} >= {"plugin-crashed", "plugin-hung"}


def test_the_runtime_check_runs_with_the_plugin_doctor_blocked(site: Callable[..., str]) -> None:
    """Before, the runtime-answers child ran the crashing plugin again and reported a hang of the active backend."""
    dying = backend_plugin("acmedie", priority=990, class_body="def __init__(self):\n        import os; os._exit(7)")
    result = run_accelhal("doctor", "--json", env={"PYTHONPATH": site(die=dying)})
    assert result.returncode == 1, result.output
    assert result.json()["active"] == "acmegood"
    found = problems(result)
    assert set(found) == {"plugin-crashed"}, found
    assert found["plugin-crashed"]["title"] == "plugin 'acmedie' ends the process while constructing backend 'acmedie'"
