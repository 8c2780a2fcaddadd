"""The command in a pseudo-terminal of 80 columns: colour on a terminal, none with NO_COLOR or when piped."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from tests.cli.conftest import clean_env, run_accelhal

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(*args: str, no_color: bool) -> str:
    """``python -m accelhal ARGS`` with a pty of 80x50 as its terminal; returns what it drew."""
    env = clean_env({"TERM": "xterm-256color"})
    if not no_color:
        del env["NO_COLOR"]
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "accelhal", *args], stdin=secondary, stdout=secondary, stderr=secondary, env=env
    )
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
    assert "╭" in plain  # rounded boxes on a terminal
    assert max(len(line) for line in plain.splitlines()) <= 80


def colour_codes(drawn: str) -> list[str]:
    """The SGR parameters that set a foreground or background colour."""
    params = [p for codes in re.findall(r"\x1b\[([0-9;]*)m", drawn) for p in codes.split(";") if p]
    return [p for p in params if 30 <= int(p) <= 49 or 90 <= int(p) <= 107]


def test_no_color_is_honoured_on_a_terminal() -> None:
    assert colour_codes(run_in_terminal("list", no_color=False))  # green "available", ...
    assert colour_codes(run_in_terminal("list", no_color=True)) == []  # bold and italic may stay


def test_piped_output_is_plain_text_without_no_color() -> None:
    env = clean_env()
    del env["NO_COLOR"]
    result = subprocess.run(
        [sys.executable, "-m", "accelhal", "list"], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "\x1b[" not in result.stdout and "+---" in result.stdout  # ASCII boxes when piped
    assert run_accelhal("list").stdout == result.stdout
