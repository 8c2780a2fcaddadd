"""The command with a closed stdout or stderr, or a ``COLUMNS`` it cannot lay out in: it still does its work.

A program started with ``>&-`` (stdout closed) or ``2>&-`` (stderr closed) has no file
behind that descriptor. The command goes on as if the stream were a reader that went away
(``accelhal list | head -1``): what it would write there is dropped, the other stream gets
all it would have, and the exit status is the command's own, with no traceback. Piped
output is laid out for 80 columns whatever ``COLUMNS`` says: a narrow ``COLUMNS`` is a
terminal's width, and piped output has no terminal.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.conftest import Result, clean_env, run_accelhal


def shell(redirect: str, *args: str) -> Result:
    """``python -m accelhal ARGS REDIRECT`` started by a shell, as a user types it."""
    command = ["bash", "-c", f'exec "$@" {redirect}', "bash", sys.executable, "-m", "accelhal", *args]
    done = subprocess.run(command, env=clean_env(), capture_output=True, text=True, timeout=300, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("args", [("list",), ("doctor",), ("explain", "nosuch")], ids=" ".join)
def test_a_closed_stdout_leaves_the_exit_status_and_stderr_the_commands_own(args: tuple[str, ...]) -> None:
    expected = run_accelhal(*args)
    result = shell(">&-", *args)
    assert result.returncode == expected.returncode, result.output
    assert result.stderr == expected.stderr  # the error line where there is one, and no traceback


@pytest.mark.parametrize("args", [("list",), ("doctor",), ("explain", "nosuch")], ids=" ".join)
def test_a_closed_stderr_leaves_stdout_and_the_exit_status_the_commands_own(args: tuple[str, ...]) -> None:
    expected = run_accelhal(*args)
    result = shell("2>&-", *args)
    assert (result.returncode, result.stdout) == (expected.returncode, expected.stdout)


@pytest.mark.parametrize("columns", ["10", "0", "abc", "100000"])
def test_piped_output_is_80_columns_whatever_columns_says(columns: str) -> None:
    expected = run_accelhal("list")
    result = run_accelhal("list", env={"COLUMNS": columns})
    assert (result.returncode, result.stdout) == (expected.returncode, expected.stdout)


FULL_CASES = [("info", "--json"), ("list", "--json"), ("schema", "--json"), ("info",)]


@pytest.mark.parametrize("args", FULL_CASES, ids=" ".join)
def test_a_full_stdout_is_one_error_line_and_status_1(args: tuple[str, ...]) -> None:
    """Before, ``--json`` wrote its error document to the stdout that had just failed: three tracebacks."""
    result = shell(">/dev/full", *args)
    assert result.returncode == 1, result.output
    assert "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("accelhal: error: ") and "No space left on device" in line, line
