"""Process hygiene, in fresh subprocesses: the probe creates no device context; detection then fork works."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from accelhal.contract.accelerator import Accelerator
from accelhal.process import child_processes
from accelhal.testing.conformance.base import SuiteBase, allocation_problem, expect


def run_isolated(*args: str) -> dict[str, Any]:
    """Run :mod:`accelhal.testing.isolated` in a fresh interpreter that sees this process's modules.

    The interpreter and what it starts end with this process, and when its 300 s are up
    (:func:`accelhal.process.child_processes.run`).
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = child_processes.run([sys.executable, "-m", "accelhal.testing.isolated", *args], timeout=300, env=env)
    if done.returncode != 0:
        raise AssertionError(
            f"accelhal.testing.isolated {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class ProcessTests(SuiteBase):
    """Probe cost and fork safety of the backend, each checked in a fresh process."""

    def test_probe_creates_no_device_context(self, accelerator: Accelerator) -> None:
        result = run_isolated("probe", accelerator.name)
        if not result["registered"]:
            pytest.skip(f"the {accelerator.name!r} backend is not registered through a plugin; it has no probe to run")
        if result["initialized"] is None:
            pytest.skip(
                f"the {accelerator.name!r} accelerator has no device module with is_initialized() "
                f"(its 'module' is {result['module']}); a device context cannot be observed"
            )
        expect(
            result["initialized"] is False,
            f"the {accelerator.name!r} probe",
            f"no device context: {result['module']}.is_initialized() False after probing and constructing "
            "the accelerator",
            f"is_initialized() is {result['initialized']} (probe said {result['status']}: {result['reason']})",
        )

    def test_detection_then_fork(self, accelerator: Accelerator) -> None:
        tensors = allocation_problem(accelerator) is None
        result = run_isolated("fork", accelerator.name, *(["tensors"] if tensors else []))
        expect("error" not in result, "fork after detection", "the child to use the device", result.get("error"))
        expect(result["exitcode"] == 0, "fork after detection", "the child to exit with 0", result["exitcode"])
        if tensors:
            expect(
                result["sum"] == 8.0,
                "fork after detection",
                "the child to compute (ones(4) * 2).sum() == 8",
                result["sum"],
            )
