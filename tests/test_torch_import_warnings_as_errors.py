"""A torch that warns while it is imported, in a process that turns warnings into errors: the hint says so.

torch warns "Failed to initialize NumPy" where numpy cannot be imported (the CPU build does not
depend on it); under ``python -W error`` that warning is the exception ``import torch`` raises.
Reinstalling torch changes nothing then, so the hint must not say to.
"""

from __future__ import annotations

import os
import subprocess
import sys

SELECT = """
import sys
sys.modules["numpy"] = None  # numpy absent, as in a venv with the CPU build of torch alone
import accelhal
try:
    accelhal.get_accelerator()
except accelhal.BackendUnavailableError as err:
    print(err.hint)
"""


def test_a_warning_raised_as_an_error_by_import_torch_gets_its_own_hint() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACCELERATOR", "PYTHONWARN"))}
    command = [sys.executable, "-W", "error::UserWarning", "-c", SELECT]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "'import torch' warned, and this process turns warnings into errors (python -W error or PYTHONWARNINGS): "
        "let that UserWarning through (add -W 'default::UserWarning' after -W error) or remove what it warns of."
    )
