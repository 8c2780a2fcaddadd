"""Tests of accelhal.compat: bridges to other frameworks, run against the real frameworks."""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

requires_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="needs the deepspeed extra: pip install '.[deepspeed]' in the clone",
)

uses_cpu_adam = pytest.mark.xdist_group("deepspeed-cpu-adam")
"""The modules whose processes load DeepSpeed's ``cpu_adam`` from ``deepspeed_ops_cache``: one worker runs them
in turn, so that the first builds it and the others load it rather than wait in a child for another worker's build."""


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without launcher, accelhal or DeepSpeed selection variables, plus ``overrides``.

    The repository is put on ``PYTHONPATH`` (the scripts import ``tests``); one OpenMP thread
    per process keeps two ranks from fighting over two cores.
    """
    prefixes = ("ACCELHAL_", "DS_ACC", "LOCAL_", "RANK", "WORLD", "MASTER_", "TORCHELASTIC_", "GROUP_", "ROLE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env.update(PYTHONPATH=path, OMP_NUM_THREADS="1")
    env.update(overrides)
    return env


def free_port() -> int:
    """A TCP port free on this host now (for a launcher that cannot pick its own)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
