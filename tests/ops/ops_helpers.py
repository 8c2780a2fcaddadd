"""Helpers of the op-builder tests: running Python in a subprocess, counting compiler runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import warm

HERE = Path(__file__).resolve().parent


def run_python(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python args...`` with this directory importable and the current environment (plus ``env``).

    A script's run (``tiny_ops.py``, which builds and loads an op after ``import torch``) is
    forked from a warm interpreter that imported torch (:mod:`tests.warm`) wherever that is the
    same as a fresh one; ``-c`` code runs in a fresh interpreter (it may test what imports torch).
    """
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join([str(HERE), full_env.get("PYTHONPATH", "")])
    if args[0].endswith(".py"):
        return warm.run_script(Path(args[0]), list(args[1:]), full_env, sys.executable, timeout)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=full_env, timeout=timeout, check=False
    )


def ninja_compiles(directory: Path, object_suffix: str = ".o") -> int:
    """How many compile steps ninja has logged in ``directory`` (one line per step it ran)."""
    log = directory / ".ninja_log"
    if not log.exists():
        return 0
    lines = [line for line in log.read_text().splitlines() if line and not line.startswith("#")]
    return sum(1 for line in lines if line.split("\t")[3].endswith(object_suffix))
