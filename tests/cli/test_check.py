"""``accelhal check``: the real conformance suite, and the tally over a run with every outcome.

``accelhal check cpu`` runs the real conformance kit. To see every outcome counted
(passed, failed, skipped, error), ``accelhal.testing.run_suite`` is pointed at a small
test file with one test of each kind: a real pytest session, only the file differs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.cli.conftest import Result, run_accelhal
from tests.torch_features import reports_no_accelerator

SUITE = """
import pytest

def test_passes():
    pass

def test_fails():
    assert 1 == 2, "one is not two"

@pytest.mark.skip(reason="not on this backend")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")

def test_errors(broken):
    pass
"""

STAND_IN = """
import sys, pytest
import accelhal.testing
def run_suite(backend, extra_args):
    print("pytest chatter that must not reach stdout in --json mode")
    return int(pytest.main([*extra_args, "-p", "no:cacheprovider", {path!r}]))
accelhal.testing.run_suite = run_suite
from accelhal.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def stand_in(tmp_path: Path) -> str:
    """``python -c`` code that runs the command with the suite replaced by :data:`SUITE`."""
    suite = tmp_path / "test_standin_suite.py"
    suite.write_text(textwrap.dedent(SUITE))
    return STAND_IN.format(path=str(suite))


def run_stand_in(tmp_path: Path, *args: str) -> Result:
    """``accelhal ARGS`` with the suite replaced by :data:`SUITE`, forked from the warm interpreter.

    The command selects its backend (importing torch) before the suite runs, so a child that
    imported torch first is what a fresh one is by then.
    """
    return run_accelhal(*args, code=stand_in(tmp_path), code_after_torch=True)


def test_check_counts_every_outcome(tmp_path: Path) -> None:
    result = run_stand_in(tmp_path, "check", "cpu", "--json")
    assert result.returncode == 1, result.output  # pytest's status when a test failed
    data = result.json()
    assert (data["backend"], data["passed"], data["failed"], data["skipped"], data["errors"]) == ("cpu", 1, 1, 1, 1)
    messages = {f["nodeid"].rpartition("::")[2]: f["message"] for f in data["failures"]}
    assert "one is not two" in messages["test_fails"]
    assert "fixture exploded" in messages["test_errors"]


def test_check_prints_a_summary_table_and_passes_pytest_args(tmp_path: Path) -> None:
    result = run_stand_in(tmp_path, "check", "--", "-k", "passes or skipped")
    assert result.returncode == 0, result.output
    assert "Conformance" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith(" cpu "))
    assert [cell.strip() for cell in row.split("|")] == ["cpu", "1", "0", "1", "0", "0"]
    assert "Traceback" not in result.output


def test_check_unknown_backend_is_a_user_mistake(tmp_path: Path) -> None:
    result = run_stand_in(tmp_path, "check", "tpu")
    assert result.returncode == 2
    assert "unknown accelerator 'tpu'" in result.stderr
    assert "Traceback" not in result.output


def test_check_of_a_backend_whose_plugin_failed_to_load_says_so(staged_path: str) -> None:
    result = run_accelhal("check", "staged_broken", env={"PYTHONPATH": staged_path})
    assert result.returncode == 2 and "Traceback" not in result.output, result.output
    said = " ".join(result.stderr.split())
    assert (
        "accelerator 'staged_broken' (requested by accelhal check) is not available: the plugin that would provide "
        "it, 'staged_broken' (staged-broken 1.0), failed to load: ImportError: staged: this plugin cannot be imported"
    ) in said
    assert "unknown" not in said


@reports_no_accelerator  # before 2.6: too old, as selection says (tests/test_generic_checklist.py)
def test_check_generic_without_an_accelerator_says_why_as_selection_does() -> None:
    said = (
        "accelerator 'generic' (requested by accelhal check) is not available: no device torch.accelerator "
        "reports is left to the generic backend: torch reports no accelerator "
        "(torch.accelerator.current_accelerator() is None)."
    )
    result = run_accelhal("check", "generic")
    assert result.returncode == 2 and "Traceback" not in result.output, result.output
    assert said in " ".join(result.stderr.split())
    data = run_accelhal("check", "generic", "--json").json()
    assert data["command"] == "check" and data["error"].startswith(said)


def test_check_runs_the_real_conformance_suite_on_cpu() -> None:
    result = run_accelhal("check", "cpu", "--json")
    assert result.returncode == 0, result.output
    data = result.json()
    assert data["backend"] == "cpu" and data["failed"] == 0 and data["errors"] == 0
    assert data["passed"] > 100 and data["skipped"] > 0  # skips: capabilities cpu declares absent


def test_check_keeps_pytest_quiet_unless_verbose(tmp_path: Path) -> None:
    quiet = run_stand_in(tmp_path, "check")
    assert quiet.returncode == 1, quiet.output
    assert "test session starts" not in quiet.output and "[100%]" not in quiet.output
    assert "pytest chatter" not in quiet.output
    assert "exit status 1: some tests failed" in quiet.stdout
    for verbose in (["check", "-v"], ["-v", "check"]):
        loud = run_stand_in(tmp_path, *verbose)
        assert loud.returncode == 1, loud.output
        assert "test session starts" in loud.stderr and "pytest chatter" in loud.stderr
        assert "Conformance" in loud.stdout


def test_check_shows_pytest_output_when_the_run_ends_without_a_verdict(tmp_path: Path) -> None:
    result = run_stand_in(tmp_path, "check", "--", "--no-such-option")
    assert result.returncode == 4, result.output  # pytest's usage error
    assert "--no-such-option" in result.stderr
    assert "exit status 4: pytest was given an argument it does not accept" in " ".join(result.stdout.split())
