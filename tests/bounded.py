"""A child process run to completion within a time bound, the test failing with its output past it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest


def run_bounded(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    stop: Callable[[subprocess.Popen[str]], tuple[str, str]],
    describe: Callable[[str, str], str],
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with its output piped; past ``timeout`` seconds, ``stop(process)`` ends it (and whatever it
    started) and returns what it printed, and the test fails with ``describe(stdout, stderr)``."""
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(env), cwd=cwd
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(describe(*stop(process)))
    return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)
