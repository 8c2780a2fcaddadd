"""``--json`` prints exactly one JSON document, whichever way the command ends.

A runtime that ignores the stack-dump signal and answers just after its deadline of a second (the
least there is), 0.3 s or 0.05 s after it, while the command waits for the stacks it will never get;
a plugin that kills the command's process between two steps; and a usage error under ``--json``:
each prints one document on stdout, the command's own or the error document ``accelhal schema
error`` describes.
"""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

pytestmark = pytest.mark.slow  # a second or two of deadline in each command

LATE = """
import os
import signal
import time

def _late():
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # as a runtime that masks or takes over the signal
    time.sleep(float(os.environ["ACME_ANSWER_AFTER"]))
    return Verdict.available("acme: answered")
"""
LATE_PLUGIN = backend_plugin("acmelate", priority=950, probe_body="return _late()", module_prelude=LATE)


def _documents(stdout: str) -> list[object]:
    """Every JSON document on ``stdout``, one after the other."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while stdout[at:].strip():
        at += len(stdout[at:]) - len(stdout[at:].lstrip())
        document, at = decoder.raw_decode(stdout, at)
        found.append(document)
    return found


def _chosen(command: str, document: dict[str, object]) -> object:
    if command == "info":
        detection = document["detection"]
        assert isinstance(detection, dict)
        return detection["chosen"]
    return document["chosen" if command == "list" else "active"]


@pytest.mark.parametrize(("timeout", "answer_after"), [("1", "1.3"), ("1", "1.05")], ids=["1s", "at-once"])
@pytest.mark.parametrize("command", ["info", "list", "explain"])
def test_an_answer_just_after_the_deadline_gives_one_document(
    install_distribution: InstallDistribution, command: str, timeout: str, answer_after: str
) -> None:
    site = install_distribution("acme-late", {"acme_late": LATE_PLUGIN}, {"acmelate": "acme_late"}).parent
    env = {"PYTHONPATH": str(site), "ACME_ANSWER_AFTER": answer_after}
    result = run_accelhal(command, "--json", "--timeout", timeout, env=env)
    assert result.returncode == 0, result.output
    documents = _documents(result.stdout)
    assert len(documents) == 1, result.output
    [document] = documents
    assert isinstance(document, dict)
    declared = "backend 'acmelate' (its probe) gave no answer" in result.stderr
    assert _chosen(command, document) == ("cpu" if declared else "acmelate"), result.output  # stderr and stdout agree


KILLER = """
import os
import signal
import sys

from accelhal.process import watchdog

OWN = (os.sep + "accelhal" + os.sep, os.sep + "accelhal_backends" + os.sep)
FOLLOWING = (os.sep + "process" + os.sep, os.sep + "supervision" + os.sep)

def _kill_outside_steps(frame, event, arg):  # at the command's first call once the probe's step has ended
    where = frame.f_code.co_filename
    if event == "call" and watchdog.current() is None and any(part in where for part in OWN):
        if not any(part in where for part in FOLLOWING):  # (the code that says the step ended)
            os.kill(os.getpid(), signal.SIGKILL)

def _start_killer():
    sys.setprofile(_kill_outside_steps)
    return Verdict.no_device("acme: none")
"""
KILLER_PLUGIN = backend_plugin("acmekiller", priority=950, probe_body="return _start_killer()", module_prelude=KILLER)


@pytest.mark.parametrize("command", ["info", "list"])
def test_a_command_killed_between_two_steps_gives_the_error_document(
    install_distribution: InstallDistribution, command: str
) -> None:
    site = install_distribution("acme-killer", {"acme_killer": KILLER_PLUGIN}, {"acmekiller": "acme_killer"}).parent
    result = run_accelhal(command, "--json", env={"PYTHONPATH": str(site)})
    assert result.returncode == 1, result.output
    (said,) = result.stderr.splitlines()
    assert said.startswith(f"accelhal: error: 'accelhal {command}' stopped: "), said
    assert "SIGKILL" in said
    [document] = _documents(result.stdout)
    assert document == {"command": command, "error": said.removeprefix("accelhal: error: ")}


USAGE_ERRORS = {
    "unknown option": (["info", "--json", "--bogus"], "info", "unrecognized arguments: --bogus"),
    "bad --timeout": (["list", "--json", "--timeout", "soon"], "list", "argument --timeout: 'soon' is not"),
    "arguments after --": (["doctor", "--json", "--", "-k", "x"], "doctor", "arguments after '--' are only for"),
    "unknown command": (["--verbose", "infos", "--json"], "infos", "invalid choice: 'infos'"),
}


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_a_usage_error_under_json_is_the_error_document(case: str) -> None:
    args, command, said = USAGE_ERRORS[case]
    result: Result = run_accelhal(*args)
    assert result.returncode == 2, result.output
    assert said in result.stderr
    [document] = _documents(result.stdout)
    assert isinstance(document, dict) and document == {"command": command, "error": document["error"]}
    assert said in document["error"] and document["error"] in result.stderr


@pytest.mark.parametrize(
    ("args", "command", "starts"),
    [
        (["info", "--json", "--help"], "info", "usage: accelhal info"),
        (["--json", "--help"], "", "usage: accelhal"),
        (["--version", "--json"], "", "accelhal "),
    ],
    ids=["info --help", "--help", "--version"],
)
def test_help_and_version_under_json_are_one_document(args: list[str], command: str, starts: str) -> None:
    plain = run_accelhal(*[arg for arg in args if arg != "--json"])
    result = run_accelhal(*args)
    assert result.returncode == 0 and plain.returncode == 0, result.output
    [document] = _documents(result.stdout)
    assert document == {"command": command, "text": plain.stdout}, document
    assert document["text"].startswith(starts)
