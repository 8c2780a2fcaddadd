"""Run Python in a subprocess that sees simulated vendor packages (one vendor's PrivateUse1 per process).

The subprocess is forked from a warm interpreter that imported torch (:mod:`tests.warm`): the
simulated packages are imported by accelhal's probes, after torch, as the real ones are.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from accelhal.testing.simulated import DEVICES_VARIABLE, write_broken_package, write_vendor_package
from tests import warm

ROOT = Path(__file__).resolve().parent.parent
CLEAN = ("ACCELHAL_ACCELERATOR", "DS_ACCELERATOR", "ACCELHAL_PLUGINS", "ACCELHAL_BLOCK_PLUGINS", "ACCELHAL_STRICT")


def simulated_site(tmp: Path, vendors: tuple[str, ...] = (), broken: dict[str, str] | None = None) -> Path:
    """A directory holding the simulated packages of ``vendors`` and the ``broken`` ones (package -> error)."""
    site = tmp / "simulated-site"
    site.mkdir(exist_ok=True)
    for vendor in vendors:
        write_vendor_package(vendor, site)
    for package, error in (broken or {}).items():
        write_broken_package(package, site, error)
    return site


def run_python(site: Path, code: str, devices: int = 2, **env: str) -> dict[str, Any]:
    """Run ``code`` (which prints one JSON object last) with ``site`` on the path; return that object."""
    environ = {k: v for k, v in os.environ.items() if k not in CLEAN}
    path = os.pathsep.join(p for p in (str(site), environ.get("PYTHONPATH", "")) if p)
    environ.update(PYTHONPATH=path, **{DEVICES_VARIABLE: str(devices)}, **env)
    out = warm.run_code(code, [], environ, sys.executable, timeout=240, cwd=ROOT)
    if out.returncode != 0:
        raise AssertionError(f"subprocess failed ({out.returncode}):\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


DETECT = """
import json, os, accelhal

def summary():
    report = accelhal.detect()
    return {
        "chosen": report.chosen, "rule": report.rule, "error": report.error,
        "candidates": {c.name: {"status": c.status.value, "reason": c.reason, "hint": c.hint}
                       for c in report.candidates},
    }

result = summary()
force = os.environ.get("FORCE_AFTERWARDS")
if force:  # the same runtime, selection forced by name
    os.environ["ACCELHAL_ACCELERATOR"] = force
    accelhal.reset_accelerator()
    result["forced"] = summary()
print(json.dumps(result))
"""
"""Prints the detection as JSON; with ``FORCE_AFTERWARDS=<name>`` also the detection forced to that backend."""
