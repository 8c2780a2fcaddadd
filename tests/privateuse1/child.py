"""Run code in a fresh interpreter where the test device is loaded (the PrivateUse1 rename is once per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.distributions import lay_out
from tests.privateuse1 import device
from tests.simulation import CLEAN, ROOT, run_python

PRELUDE = """
import json, os, torch
from tests.privateuse1 import device
module = device.load({name!r})
name = {name!r}
"""


def on_device(code: str, name: str = device.DEFAULT_NAME, devices: int = 2, **env: str) -> dict[str, Any]:
    """Run ``code`` after loading the device as ``name`` with ``devices`` devices; the JSON object it prints last.

    ``code`` sees ``torch``, ``json``, ``os``, ``name`` and ``module`` (``torch.<name>``).
    """
    env.setdefault(device.DEVICES_VARIABLE, str(devices))
    # torch's autograd engine keeps a worker thread per device type that may still be finishing
    # its last task while the interpreter shuts down (torch's exit race, pytorch/pytorch#38228),
    # which aborts the process after the result was printed: end without interpreter teardown.
    epilogue = "\nimport sys as _sys\n_sys.stdout.flush()\nos._exit(0)\n"
    return run_python(ROOT, PRELUDE.format(name=name) + code + epilogue, 2, **env)


def build_in_child(**env: str) -> dict[str, Any]:
    """Locate or build the library in a fresh interpreter: ``{"path", "built", "seconds"}``."""
    code = (
        "import json, time\nfrom tests.privateuse1.device import library\nstarted = time.monotonic()\n"
        "path, built = library()\n"
        "print(json.dumps({'path': str(path), 'built': built, 'seconds': time.monotonic() - started}))"
    )
    return run_python(ROOT, code, 2, **env)


def write_autoload_distribution(site: Path, name: str, accelhal_plugin: str | None = None) -> None:
    """Install (as pip lays it out) a distribution whose ``torch.backends`` entry point loads the device as ``name``.

    This is how out-of-tree vendors arrive: ``import torch`` alone loads them. With
    ``accelhal_plugin`` (a module), the distribution also registers that accelhal plugin.
    """
    groups = {"torch.backends": {name: "tests.privateuse1.device:autoload"}}
    if accelhal_plugin:
        groups["accelhal"] = {"testdev": accelhal_plugin}
    lay_out(site, "accelhal-testdev", entry_points=groups)


def run_accelhal(
    site: Path, *args: str, name: str = device.DEFAULT_NAME, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m accelhal ARGS`` with ``site`` (an autoload distribution) on the path, the device named ``name``."""
    environ = {k: v for k, v in os.environ.items() if k not in CLEAN}
    environ.update(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), **{device.NAME_VARIABLE: name}, **env)
    return subprocess.run(
        [sys.executable, "-m", "accelhal", *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600
    )
