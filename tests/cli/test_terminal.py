"""The command in a pseudo-terminal of 80 columns: colour on a terminal, none with NO_COLOR or when piped.

``NO_COLOR`` (https://no-color.org) asks for no colour, and only that: bold and the
box-drawing characters stay on a terminal. Piped output has no escape code at all.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.cli.conftest import clean_env, run_accelhal
from tests.cli.test_check import stand_in

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(
    *args: str, no_color: bool | str, rows: int = 50, code: str | None = None, env: Mapping[str, str] | None = None
) -> str:
    """``python -m accelhal ARGS`` (or ``python -c CODE ARGS``) with a pty of 80xROWS as its terminal.

    ``no_color``: ``True`` sets ``NO_COLOR=1``, ``False`` leaves it unset, a string sets it to
    that; ``env`` adds variables. Returns what the command drew.
    """
    environ = clean_env({"TERM": "xterm-256color", **(env or {})})
    if no_color is False:
        del environ["NO_COLOR"]
    elif no_color is not True:
        environ["NO_COLOR"] = no_color
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 80, 0, 0))
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "accelhal", *args]
    proc = subprocess.Popen(command, stdin=secondary, stdout=secondary, stderr=secondary, env=environ)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(primary)
    return b"".join(chunks).decode()


@pytest.mark.parametrize("args", [["info"], ["list"]], ids=" ".join)
def test_terminal_gets_colour_and_80_columns(args: list[str]) -> None:
    drawn = run_in_terminal(*args, no_color=False)
    assert ANSI.search(drawn), drawn
    plain = ANSI.sub("", drawn)
    assert "┼" in plain  # box-drawing lines on a terminal
    assert max(len(line) for line in plain.splitlines()) <= 80


def colour_codes(drawn: str) -> list[str]:
    """The SGR parameters that set a foreground or background colour."""
    params = [p for codes in re.findall(r"\x1b\[([0-9;]*)m", drawn) for p in codes.split(";") if p]
    return [p for p in params if 30 <= int(p) <= 49 or 90 <= int(p) <= 107]


def test_no_color_removes_the_colour_and_only_the_colour() -> None:
    assert colour_codes(run_in_terminal("list", no_color=False))  # green "available", ...
    drawn = run_in_terminal("list", no_color=True)
    assert colour_codes(drawn) == []
    assert re.search(r"\x1b\[1m", drawn)  # bold labels stay: they are not colour
    assert "┼" in ANSI.sub("", drawn)  # and so do the box-drawing lines


def test_an_empty_no_color_leaves_the_colour_on() -> None:
    """no-color.org: NO_COLOR counts when it is set and not empty."""
    assert colour_codes(run_in_terminal("list", no_color=""))


def test_list_fits_an_80x40_terminal() -> None:
    lines = ANSI.sub("", run_in_terminal("list", no_color=True, rows=40)).rstrip().splitlines()
    assert len(lines) <= 38, "\n".join(lines)  # with the prompt and the command line, 40 rows
    assert max(len(line) for line in lines) <= 80


def test_check_counts_as_it_runs_and_keeps_pytest_quiet(tmp_path: Path) -> None:
    drawn = ANSI.sub("", run_in_terminal("check", no_color=True, code=stand_in(tmp_path)))
    assert "1 passed, 1 failed, 1 skipped, 1 errors" in drawn  # the progress line, drawn live
    assert "0/?" not in drawn
    assert "[100%]" not in drawn and "short test summary" not in drawn  # no pytest chatter
    assert "Conformance" in drawn and "Failures" in drawn


def test_piped_output_is_plain_text_without_no_color() -> None:
    env = clean_env()
    del env["NO_COLOR"]
    result = subprocess.run(
        [sys.executable, "-m", "accelhal", "list"], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "\x1b[" not in result.stdout and "-+-" in result.stdout  # ASCII lines when piped
    assert run_accelhal("list").stdout == result.stdout


@pytest.mark.parametrize("columns", ["0", "1"])
def test_a_terminal_narrower_than_any_line_still_gets_the_output_and_the_error(columns: str) -> None:
    """Before, `COLUMNS=0` printed nothing, not even the error of a bad variable; `COLUMNS=1`, a letter a line."""
    shown = run_in_terminal("info", no_color=True, env={"COLUMNS": columns, "ACCELHAL_ACCELERATOR": "nope"})
    assert "unknown accelerator 'nope'" in " ".join(ANSI.sub("", shown).split()), shown
    shown = run_in_terminal("info", no_color=True, env={"COLUMNS": columns})
    assert "active backend: cpu" in ANSI.sub("", shown), shown
