"""A plugin that ends the process (``os._exit`` at import, ``KeyboardInterrupt`` from a probe) is named by every
command: one ``accelhal: error:`` line, the error document under ``--json``; never an exit with no output."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

DYING = {
    "exit-at-import": ("import os\nos._exit(3)\n", "plugin 'acmedying' (its import) ended the process (exit status 3)"),
    "interrupt-in-probe": (
        backend_plugin("acmedying", probe_body="raise KeyboardInterrupt"),
        "backend 'acmedying' (its probe) raised KeyboardInterrupt, which ends a program",
    ),
}


@pytest.mark.parametrize("how", DYING)
@pytest.mark.parametrize("command", ["info", "list", "explain"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_every_command_names_the_plugin_that_ended_it(
    install_distribution: InstallDistribution, how: str, command: str, json_flag: list[str]
) -> None:
    source, said = DYING[how]
    site = install_distribution("acme-dying", {"acme_dying": source}, {"acmedying": "acme_dying"}).parent
    result = run_accelhal(command, *json_flag, env={"PYTHONPATH": str(site)})
    assert result.returncode == 1, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"accelhal: error: 'accelhal {command}' stopped: {said}")
    assert "ACCELHAL_BLOCK_PLUGINS=acmedying" in line
    if json_flag:
        assert said in json.loads(result.stdout)["error"]  # one document
    else:
        assert result.stdout == ""


def test_blocked_it_is_skipped_as_the_error_says(install_distribution: InstallDistribution) -> None:
    source, _ = DYING["exit-at-import"]
    site = install_distribution("acme-dying", {"acme_dying": source}, {"acmedying": "acme_dying"}).parent
    result = run_accelhal("info", env={"PYTHONPATH": str(site), "ACCELHAL_BLOCK_PLUGINS": "acmedying"})
    assert result.returncode == 0, result.output
