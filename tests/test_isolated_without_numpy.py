"""``accelhal check`` under ``PYTHONWARNINGS=error`` without numpy: its fresh-process checks pass too.

torch warns "Failed to initialize NumPy" at ``import torch`` where numpy is not installed (a
venv with the ``kit`` extra alone); the command hides that one warning, and so must the
children that the kit's process checks start (:mod:`accelhal.testing.isolated`), which
inherit ``PYTHONWARNINGS``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

NO_NUMPY = '''
import sys

class NoNumpy:
    """numpy not installed: its import fails as Python's own does for a missing module."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "numpy":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoNumpy())
'''

PROCESS_CHECKS = "test_probe_creates_no_device_context or test_detection_then_fork"


def test_process_checks_pass_with_warnings_as_errors_and_no_numpy(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(NO_NUMPY)  # imported by every interpreter the command starts
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACCELERATOR", "PYTEST_"))}
    env.update(PYTHONPATH=str(tmp_path), PYTHONWARNINGS="error")
    command = [sys.executable, "-m", "accelhal", "check", "cpu", "--json", "--", "-k", PROCESS_CHECKS]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    result = json.loads(done.stdout)
    assert (done.returncode, result["failed"], result["errors"]) == (0, 0, 0), result["failures"]
    assert result["passed"] + result["skipped"] == 2 and result["passed"] >= 1, result
