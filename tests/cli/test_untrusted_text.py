"""A plugin's or a runtime's words are shown as text: their control characters are made visible.

A probe's reason, a spec's description and hint, a plugin's import error and a device's name
come from code accelhal does not control. Printed as they are, an escape code sets the window
title or clears the screen, and a newline forges a line of accelhal's own (``active backend:
cuda``). Every command shows them with each control character written as its escape (``\\x1b``,
``\\n``), piped or on a terminal; ``--json`` keeps the text itself, escaped by JSON, with no raw
control character in the document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.cli.test_check import STAND_IN
from tests.cli.test_terminal import run_in_terminal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

FORGE = "\x1b]0;pwned\x07\x1b[2J\x9b2J\u202e\r\nactive backend: cuda"
"""A window title, a clear screen (7-bit and 8-bit), a right-to-left override, then a forged line."""
SHOWN = r"\x1b]0;pwned\x07\x1b[2J\x9b2J\u202e\r\nactive backend: cuda"
"""How the commands show it."""
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Control characters that must never reach the output raw (a newline is the command's own)."""

EVIL = backend_plugin(
    "acmeevil",
    priority=950,
    probe_body=f"return Verdict.available({'present' + FORGE!r})",
    class_body=f"def device_description(self, device_index):\n        return {'acme' + FORGE!r}",
    spec_extra=f", description={'evil' + FORGE!r}",
)
BROKE = backend_plugin(
    "acmebroke",
    priority=900,
    probe_body=f"return Verdict.broken({'driver' + FORGE!r}, hint={'reinstall' + FORGE!r})",
    spec_extra=f", description={'broke' + FORGE!r}",
)
BOOM = f"raise ImportError({'boom' + FORGE!r})\n"


@pytest.fixture
def site(install_distribution: InstallDistribution) -> str:
    """The three hostile plugins, installed; the directory for ``PYTHONPATH``."""
    install_distribution("acme-evil", {"acme_evil": EVIL}, {"acmeevil": "acme_evil"})
    install_distribution("acme-broke", {"acme_broke": BROKE}, {"acmebroke": "acme_broke"})
    return str(install_distribution("acme-boom", {"acme_boom": BOOM}, {"acmeboom": "acme_boom"}).parent)


COMMANDS = [("info",), ("list",), ("explain", "acmebroke"), ("doctor",)]


def joined(output: str) -> str:
    """The output with rich's wrapping undone (a long escape may be folded across lines and table cells)."""
    return re.sub(r"\s*\n[\s|]*", "", output)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_piped_output_shows_the_words_as_text(site: str, command: tuple[str, ...]) -> None:
    result = run_accelhal(*command, env={"PYTHONPATH": site})
    assert "Traceback" not in result.output, result.output
    assert not RAW.search(result.output), repr(result.output)
    lines = [line for line in result.output.splitlines() if "|" not in line]  # a table folds a long word anywhere
    assert [line for line in lines if line.lstrip(" -*").startswith("active backend: cuda")] == [], result.output
    assert SHOWN.partition(r"\r")[0] in joined(result.output), result.output


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_json_keeps_the_words_escaped_by_json(site: str, command: tuple[str, ...]) -> None:
    result = run_accelhal(*command, "--json", env={"PYTHONPATH": site})
    assert not RAW.search(result.stdout), repr(result.stdout)
    assert FORGE in "".join(_strings(result.json()))  # the text itself, as the plugin gave it


def _strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for value in data.values() for s in _strings(value)]
    if isinstance(data, list):
        return [s for value in data for s in _strings(value)]
    return []


@pytest.mark.parametrize("command", [("info",), ("list",), ("doctor",)], ids=" ".join)
def test_a_terminal_gets_only_the_commands_own_escape_codes(site: str, command: tuple[str, ...]) -> None:
    drawn = run_in_terminal(*command, no_color=False, env={"PYTHONPATH": site})
    own = re.sub(r"\x1b\[[0-9;]*m", "", drawn)  # rich's colours and bold
    assert not RAW.search(own.replace("\r\n", "\n")), repr(drawn)
    assert "pwned" in own


def test_an_error_line_shows_the_runtime_s_words_as_text(install_distribution: InstallDistribution) -> None:
    """The active backend's runtime raises while it is described: the one error line carries its message."""
    nameless = backend_plugin(
        "acmenameless",
        priority=950,
        class_body=f"def device_description(self, device_index):\n        raise RuntimeError({'nameless' + FORGE!r})",
    )
    site = install_distribution("acme-nameless", {"acme_nameless": nameless}, {"acmenameless": "acme_nameless"})
    result = run_accelhal("info", env={"PYTHONPATH": str(site.parent)})
    assert result.returncode == 1, result.output
    assert not RAW.search(result.stderr), repr(result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("accelhal: error:") and SHOWN.partition(r"\r")[0] in line


SUITE = f"""
def test_forges():
    assert False, {FORGE!r}
"""


def test_check_shows_a_failure_message_as_text(tmp_path: Path) -> None:
    suite = tmp_path / "test_forging_suite.py"
    suite.write_text(SUITE)
    result: Result = run_accelhal("check", "cpu", code=STAND_IN.format(path=str(suite)), code_after_torch=True)
    assert result.returncode == 1, result.output
    assert not RAW.search(result.output), repr(result.output)
    data = run_accelhal("check", "cpu", "--json", code=STAND_IN.format(path=str(suite)), code_after_torch=True)
    assert not RAW.search(data.stdout) and "pwned" in json.dumps(data.json())
