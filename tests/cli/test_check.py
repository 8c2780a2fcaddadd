"""``accelhal check``: progress and summary over a real pytest run of a stand-in suite.

The conformance kit (``accelhal.testing.run_suite``) is developed separately; here a
stand-in with the same interface runs a real pytest session over a small test file, so
the progress plugin, the tally, the table and the exit status are all exercised.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.cli.conftest import run_accelhal

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
import sys, types, pytest
suite = types.ModuleType("accelhal.testing")
def run_suite(backend, extra_args):
    print("pytest chatter that must not reach stdout in --json mode")
    return int(pytest.main([*extra_args, "-p", "no:cacheprovider", {path!r}]))
suite.run_suite = run_suite
sys.modules["accelhal.testing"] = suite
from accelhal.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def _stand_in(tmp_path: Path) -> str:
    suite = tmp_path / "test_standin_suite.py"
    suite.write_text(textwrap.dedent(SUITE))
    return STAND_IN.format(path=str(suite))


def test_check_counts_every_outcome(tmp_path: Path) -> None:
    result = run_accelhal("check", "cpu", "--json", code=_stand_in(tmp_path))
    assert result.returncode == 1, result.output  # pytest's status when a test failed
    data = result.json()
    assert (data["backend"], data["passed"], data["failed"], data["skipped"], data["errors"]) == ("cpu", 1, 1, 1, 1)
    messages = {f["nodeid"].rpartition("::")[2]: f["message"] for f in data["failures"]}
    assert "one is not two" in messages["test_fails"]
    assert "fixture exploded" in messages["test_errors"]


def test_check_prints_a_summary_table_and_passes_pytest_args(tmp_path: Path) -> None:
    result = run_accelhal("check", "--", "-k", "passes or skipped", code=_stand_in(tmp_path))
    assert result.returncode == 0, result.output
    assert "Conformance" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("| cpu"))
    assert row.split("|")[1:-1] == [" cpu     ", " 1      ", " 0      ", " 1       ", " 0      ", " 0    "]
    assert "Traceback" not in result.output


def test_check_unknown_backend_is_a_user_mistake(tmp_path: Path) -> None:
    result = run_accelhal("check", "tpu", code=_stand_in(tmp_path))
    assert result.returncode == 2
    assert "unknown accelerator 'tpu'" in result.stderr
    assert "Traceback" not in result.output
