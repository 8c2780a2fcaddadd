"""Forcing a backend whose plugin is blocked: the error says so in a sentence of its own, in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

FORCE = """
import accelhal
try:
    accelhal.get_accelerator()
except accelhal.UnknownBackendError as err:
    print(err)
"""


def test_forcing_a_blocked_backend_says_its_plugin_is_not_loaded() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACCELERATOR"))}
    env.update(ACCELHAL_BLOCK_PLUGINS="xpu", ACCELHAL_ACCELERATOR="xpu")
    out = subprocess.run([sys.executable, "-c", FORCE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "unknown accelerator 'xpu' (requested by ACCELHAL_ACCELERATOR); known accelerators: npu, sdaa, mps, hpu, "
        "mlu, supa, musa, cuda, xla, cpu, generic. Its plugin is not loaded: listed in ACCELHAL_BLOCK_PLUGINS."
    )
