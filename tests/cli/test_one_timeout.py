"""A hung device costs one timeout, not three: once a call is known hung, no later step of the command waits on it.

The device ``acmepu`` is a Python-only PrivateUse1 device that ``import torch`` loads (a
``torch.backends`` entry point, as vendor packages register theirs) and whose device module
never answers ``device_count()`` or ``is_available()``. ``accelhal doctor --json`` asks it three
times over: its discovery child's probe (the generic backend's), then the worker's own calls
(``torch.accelerator.is_available()``), and a worker started again after a hang runs the
discovery child again. Once the first of them hung, the others are refused at once; the
command ends within about one timeout of what the same work takes on the same machine without
the wait: doctor where the device is not loaded and a plugin's probe ends the discovery child
instead (which runs a second child too, with the plugin blocked).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin, python_device
from tests.torch_features import needs_generic_backend

# seconds of deadline, fresh interpreters; the device is the generic backend's
pytestmark = [pytest.mark.slow, needs_generic_backend]

NEVER = """
import sys
import time


def _never(what):
    sys.stderr.write(f"acmepu: {what} called\\n")
    while True:
        time.sleep(3600)
"""
DEVICE = python_device("acmepu", '_never("is_available")', '_never("device_count")', NEVER)
CRASHING = backend_plugin("acmecrash", probe_body="import os; os._exit(3)")
TIMEOUT = 6.0
"""Seconds a step may take (--timeout, which bounds doctor's discovery child too)."""


def _timed(*args: str, env: dict[str, str]) -> tuple[Result, float]:
    started = time.monotonic()
    result = run_accelhal(*args, env=env)
    return result, time.monotonic() - started


def test_doctor_on_a_hung_device_takes_one_timeout(install_distribution: InstallDistribution) -> None:
    site = install_distribution(
        "acme-pu", {"acme_pu": DEVICE}, {}, other_groups={"torch.backends": {"acmepu": "acme_pu:register"}}
    )
    install_distribution("acme-crash", {"acme_crash": CRASHING}, {"acmecrash": "acme_crash"})
    args = ("doctor", "--json", "--timeout", f"{TIMEOUT:g}")
    env = {"PYTHONPATH": str(site.parent)}
    crashed, start_up = _timed(*args, env={**env, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})  # the device not loaded
    assert "plugin-crashed" in {problem["code"] for problem in crashed.json()["problems"]}, crashed.output
    hung, took = _timed(*args, env={**env, "ACCELHAL_BLOCK_PLUGINS": "acmecrash"})
    assert took < start_up + 2 * TIMEOUT, f"{took:.1f} s; {start_up:.1f} s without the wait"
    assert hung.returncode == 1, hung.output
    problems = hung.json()["problems"]
    hangs = [problem["title"] for problem in problems if problem["code"] == "plugin-hung"]
    assert hangs == ["plugin 'generic' hangs while probing backend 'acmepu'"], problems
    refused = json.dumps([problem for problem in problems if problem["code"] == "runtime-error"])
    assert "torch.accelerator.is_available()" in refused and "DeviceCallHungError: not called" in refused, refused
    assert "gave no answer" not in hung.stderr  # no call of the command's own waited on the device
