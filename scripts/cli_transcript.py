"""Write ``docs/cli-transcript.md``: what the real ``accelhal`` commands show in an 80x40 terminal.

Each command runs on a pseudo-terminal of 80 columns and 40 rows (its stdout and stderr are
the terminal, as in a shell; stdin is ``/dev/null``), in an environment that holds only
``HOME``, ``TERM=xterm-256color``, ``LANG=C.UTF-8`` and a ``PATH`` that starts with this
interpreter's directory. What it writes is played on a small screen model (lines, carriage
returns, cursor moves and erasures; colour and bold dropped), and the screen is the page's
text. ``accelhal check`` also gets the screen of the moment its live line first counted 100
passed tests. The second part installs a plugin whose module raises ``ImportError`` (a
distribution laid out as pip installs it, on ``PYTHONPATH``).

    python scripts/cli_transcript.py        # rewrite docs/cli-transcript.md

``tests/test_cli_transcript.py`` runs the same commands (forked from its warm interpreter)
and compares their screens with the page, after normalising what varies from run to run
(:func:`normalise`).
"""

from __future__ import annotations

import codecs
import fcntl
import os
import platform
import pty
import re
import select
import shlex
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "cli-transcript.md"
COLUMNS, ROWS = 80, 40
RUNNING = re.compile(r"^[1-9]\d{2,} passed, ", re.M)
"""The live line of ``accelhal check`` once it has counted 100 passed tests."""

PLAIN = [
    "accelhal info",
    "accelhal list",
    "accelhal check",
    "accelhal doctor",
    "accelhal explain cuda",
    "ACCELHAL_ACCELERATOR=cuda accelhal info",
]
"""The commands on this machine as it is."""
WITH_PLUGIN = ["accelhal info", "accelhal list", "accelhal doctor"]
"""The commands with a plugin that cannot be imported (``check`` runs as above: it tests the active backend)."""

PLUGIN_MODULE = "raise ImportError('libacme.so: cannot open shared object file: No such file or directory')\n"
WORK_PREFIX = "accelhal-transcript-"
"""The plugin's directory is ``/tmp/accelhal-transcript-XXXXXXXX``: of one length, so lines wrap alike."""

ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-Z\\-_])")
"""A terminal escape sequence: CSI (its parameters and final byte), OSC, or a two-byte one."""

Runner = Callable[[list[str], Mapping[str, str], str], int]
"""``run(argv, env, terminal)``: run ``argv`` (``["accelhal", ...]``) with stdout and stderr on the
terminal device ``terminal``; return its exit status."""


class Screen:
    """What a terminal of :data:`COLUMNS` columns shows after the bytes written to it (history kept)."""

    def __init__(self) -> None:
        self.lines: list[list[str]] = [[]]
        self.row = self.column = 0
        self.pending = ""

    def feed(self, data: str) -> None:
        """Play ``data``: text, carriage returns, newlines and the CSI sequences rich writes (others are dropped)."""
        data = self.pending + data
        self.pending = ""
        i = 0
        while i < len(data):
            char = data[i]
            if char == "\x1b":
                match = ESCAPE.match(data, i)
                if match is None:  # an unfinished sequence: wait for the rest
                    self.pending = data[i:]
                    return
                self._escape(match.group(1))
                i = match.end()
                continue
            if char == "\r":
                self.column = 0
            elif char == "\n":
                self.row += 1
                self._line()
            elif char == "\b":
                self.column = max(0, self.column - 1)
            elif char >= " ":
                if self.column >= COLUMNS:  # the terminal wraps before the next character
                    self.row, self.column = self.row + 1, 0
                line = self._line()
                line.extend(" " * (self.column + 1 - len(line)))
                line[self.column] = char
                self.column += 1
            i += 1

    def _line(self) -> list[str]:
        while len(self.lines) <= self.row:
            self.lines.append([])
        return self.lines[self.row]

    def _escape(self, sequence: str) -> None:
        if not sequence.startswith("[") or sequence.startswith("[?"):
            return
        final, argument = sequence[-1], sequence[1:-1]
        count = int(argument) if argument.isdigit() else 0
        line = self._line()
        if final == "A":
            self.row = max(0, self.row - max(count, 1))
        elif final == "B":
            self.row += max(count, 1)
        elif final == "G":
            self.column = max(count, 1) - 1
        elif final == "K" and count == 2:
            line.clear()
        elif final == "K":
            del line[self.column :]
        elif final == "J":
            del self.lines[self.row + 1 :]
            del line[self.column :]

    def text(self) -> str:
        """The screen's lines without trailing blanks, and without blank lines at the end."""
        return "\n".join("".join(line).rstrip() for line in self.lines).strip("\n")


@dataclass
class Shown:
    """One command's screen, its exit status, and (``check``) the screen while it ran."""

    screen: str
    status: int
    running: str | None = None


@contextmanager
def terminal() -> Iterator[tuple[int, str]]:
    """A pseudo-terminal of :data:`COLUMNS` x :data:`ROWS`: its controlling side and the device's path."""
    controller, device = pty.openpty()
    fcntl.ioctl(device, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    try:
        yield controller, os.ttyname(device)
    finally:
        os.close(controller)
        os.close(device)


def show(argv: list[str], env: Mapping[str, str], run: Runner) -> Shown:
    """Run ``argv`` on a fresh terminal and read what it shows while it runs."""
    screen = Screen()
    running = None
    result: list[int] = []
    with terminal() as (controller, device):
        worker = threading.Thread(target=lambda: result.append(run(argv, env, device)))
        worker.start()
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while worker.is_alive() or select.select([controller], [], [], 0)[0]:
            if not select.select([controller], [], [], 0.05)[0]:
                continue
            try:
                data = os.read(controller, 65536)
            except OSError:
                break
            screen.feed(decoder.decode(data))
            if running is None and "check" in argv and RUNNING.search(screen.text()):
                running = screen.text()
        worker.join()
    return Shown(screen.text(), result[0], running)


def run_fresh(argv: list[str], env: Mapping[str, str], device: str) -> int:
    """The :data:`Runner` of this script: the ``accelhal`` program beside this interpreter, in a new process."""
    program = str(Path(sys.executable).parent / argv[0])
    with open(device, "wb") as out:
        proc = subprocess.run([program, *argv[1:]], env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    return proc.returncode


def environment(**extra: str) -> dict[str, str]:
    """The terminal's environment: nothing of the caller's but ``HOME``, plus ``extra``."""
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    return {"HOME": os.environ.get("HOME", "/root"), "TERM": "xterm-256color", "LANG": "C.UTF-8", "PATH": path, **extra}


def install_failing_plugin(site: Path) -> None:
    """``acme-accel 1.0``, laid out in ``site`` as pip installs it, whose module raises ``ImportError``."""
    dist_info = site / "acme_accel-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (site / "acme_accel.py").write_text(PLUGIN_MODULE)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-accel\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text("[accelhal]\nacme = acme_accel\n")
    owned = ["acme_accel.py", *(f"{dist_info.name}/{name}" for name in ("METADATA", "entry_points.txt", "RECORD"))]
    (dist_info / "RECORD").write_text("".join(f"{name},,\n" for name in owned))


def command_argv(command: str) -> tuple[list[str], dict[str, str]]:
    """``"A=b accelhal info"`` as its arguments and its variables."""
    words = shlex.split(command)
    variables = dict(word.split("=", 1) for word in words if "=" in word and not word.startswith("accelhal"))
    return [word for word in words if word not in {f"{k}={v}" for k, v in variables.items()}], variables


def section(command: str, shown: Shown, work: str) -> list[str]:
    """The page's text for one command (its screen while running first, for ``check``)."""
    out = []
    if shown.running is not None:
        out += ["", f"### `{command}`, while it runs", "", "```text", f"$ {command}", shown.running, "```"]
    screen = f"{shown.screen}\n[exit status {shown.status}]"
    out += ["", f"### `{command}`", "", "```text", f"$ {command}", screen, "```"]
    return [line.replace(work, f"/tmp/{WORK_PREFIX}XXXXXXXX") for line in out]


def transcript(run: Runner = run_fresh) -> str:
    """The whole page, from the commands' screens now."""
    import torch

    machine = f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}"
    machine += f", Python {platform.python_version()}"
    with tempfile.TemporaryDirectory(prefix=WORK_PREFIX, dir="/tmp") as work:
        install_failing_plugin(Path(work) / "site")
        out = [
            "# `accelhal` in an 80x40 terminal",
            "",
            "Generated by `scripts/cli_transcript.py`: each command run on a pseudo-terminal of 80",
            "columns and 40 rows (stdout and stderr on it, as in a shell), in an environment of only",
            "`HOME`, `TERM=xterm-256color`, `LANG=C.UTF-8` and `PATH`, and the screen as it shows it",
            "(colour and bold left out). The second part has a plugin installed whose module fails at",
            "import. Re-run the script to refresh this page; `tests/test_cli_transcript.py` fails while",
            "the commands show something else, except for what varies from run to run and machine to",
            "machine: the memory figures of `info` (and the width of their columns), the plugin's",
            "temporary directory (written here as `XXXXXXXX`) and the counts of the screen taken while",
            "`check` runs.",
            "",
            f"Machine: {machine}, no accelerator.",
            "",
            "## On this machine as it is",
        ]
        for command in PLAIN:
            argv, variables = command_argv(command)
            out += section(command, show(argv, environment(**variables), run), work)
        out += [
            "",
            "## With a plugin that cannot be imported",
            "",
            "`acme-accel 1.0`, a distribution laid out as pip installs it, whose `accelhal` entry point",
            "names a module that raises `ImportError` (as a vendor plugin does when its runtime library",
            "is missing).",
        ]
        for command in WITH_PLUGIN:
            argv, variables = command_argv(command)
            shown = show(argv, environment(PYTHONPATH=f"{work}/site", **variables), run)
            out += section(command, shown, work)
    return "\n".join(out) + "\n"


def normalise(page: str) -> str:
    """``page`` without what varies between runs: memory figures (and their columns' width), ``check``'s counts."""
    lines = page.splitlines()
    in_table = False
    for number, line in enumerate(lines):
        in_table = "memory total" in line or (in_table and ("│" in line or "─" in line))
        if in_table:
            line = re.sub(r"\d+(?:\.\d+)? [KMGT]?i?B", "<size>", line)
            lines[number] = re.sub(r"─+", "─", re.sub(r" {2,}", " ", line))
        elif re.match(r"\d+ passed, \d+ failed, \d+ skipped", line):
            lines[number] = "<the live line of check>"
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the page (``--help`` says so and writes nothing)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.parse_args(argv)
    PAGE.write_text(transcript())
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
