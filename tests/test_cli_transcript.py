"""``docs/cli-transcript.md`` is what the commands show now, in an 80x40 terminal (``scripts/cli_transcript.py``).

The commands run as the script runs them, on a pseudo-terminal of 80x40 in the same bare
environment, but forked from the warm interpreter (:func:`tests.warm.run_module_on_terminal`:
``python -m accelhal`` is the ``accelhal`` program). The page and the screens are compared
after :func:`scripts.cli_transcript.normalise` (memory figures, ``check``'s live counts).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping

import pytest
import torch

from scripts import cli_transcript
from tests import warm


def run_warm(argv: list[str], env: Mapping[str, str], terminal: str) -> int:
    """The script's runner, forked from the warm interpreter (with the test run's start-up variables)."""
    startup = {k: v for k, v in os.environ.items() if k.startswith(warm.TORCH_SENSITIVE_PREFIXES)}
    startup.pop("PYTHONPATH", None)
    return warm.run_module_on_terminal("accelhal", argv[1:], {**startup, **env}, terminal, timeout=300)


def test_transcript_is_what_the_commands_show() -> None:
    page = cli_transcript.PAGE.read_text()
    machine = re.search(r"^Machine: (\S+), \d+ CPU cores, torch (\S+), Python (\S+), ", page, re.M)
    assert machine is not None
    here = (platform.machine(), torch.__version__, platform.python_version())
    if machine.groups() != here:
        pytest.skip(f"the page was written on {machine.groups()}; this is {here}")
    now = cli_transcript.transcript(run_warm)
    line = page[machine.start() : page.index("\n", machine.start())]
    now = re.sub(r"^Machine: .*$", line, now, count=1, flags=re.M)  # the core count may differ
    assert cli_transcript.normalise(now) == cli_transcript.normalise(page), (
        "docs/cli-transcript.md is not what the commands show now: run `python scripts/cli_transcript.py`"
    )


def test_the_scripts_help_writes_nothing() -> None:
    before = cli_transcript.PAGE.stat().st_mtime_ns
    script = cli_transcript.REPO / "scripts" / "cli_transcript.py"
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("usage: cli_transcript.py [-h]") and "wrote" not in out.stdout
    assert cli_transcript.PAGE.stat().st_mtime_ns == before
