"""What the inference engines' tests share: fresh processes in their own session, their environment, the device."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.distributions import lay_out
from tests.privateuse1.child import write_autoload_distribution
from tests.sharing import RunCache
from tests.simulation import CLEAN, ROOT

RUN_SECONDS = 600.0
"""One engine's limit: start-up takes 20 to 130 s on two busy cores."""


def environment(bridge: str, base: Mapping[str, str], site: Path | None = None, **env: str) -> dict[str, str]:
    """This process's environment without accelhal's selection variables and the ``bridge`` variables, plus
    ``base`` and ``env``; ``site`` first on the path."""
    environ = {k: v for k, v in os.environ.items() if k not in CLEAN and not k.startswith(bridge)}
    environ.update(base)
    environ["PYTHONPATH"] = os.pathsep.join([*([str(site)] if site else []), str(ROOT)])
    environ.update(env)
    return environ


def kill_group(process: subprocess.Popen[str]) -> tuple[str, str]:
    """End ``process`` and every process it started (its own session); what it printed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.communicate()


def run_module(
    args: list[str], env: dict[str, str], timeout: float = RUN_SECONDS, prefix: tuple[str, ...] | list[str] = ("-m",)
) -> subprocess.CompletedProcess[str]:
    """``python -m ARGS`` (or ``python PREFIX ARGS``) in its own session, killed with its children past ``timeout``."""
    command = [sys.executable, *prefix, *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = kill_group(process)
            pytest.fail(f"{' '.join(args)} ran past {timeout:g} s; its output:\n{stdout[-3000:]}\n{stderr[-6000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def run_code(code: str, env: dict[str, str], timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in its own session (see :func:`run_module`)."""
    return run_module([code], env, timeout, prefix=["-c"])


def install_distribution(site: Path, name: str, entry_points: str) -> Path:
    """Lay out, as pip does, a distribution ``name`` 1.0 in ``site`` whose ``entry_points.txt`` is ``entry_points``."""
    lay_out(site, name, entry_points=entry_points)
    return site


def device_site(run_cache: RunCache) -> Path:
    """A site directory with the test device's autoload distribution: ``import torch`` loads it as ``testdev``."""
    return run_cache.directory("engines-testdev-site", lambda d: write_autoload_distribution(d, "testdev"))


INFO = (
    "import subprocess, sys\n"
    "print(subprocess.run([sys.executable, '-m', 'accelhal', 'info', '--json'], capture_output=True, text=True).stdout)"
)
"""``accelhal info --json`` in a child of a fresh process (the engines' tests run it with ``run_code``)."""


def rows_naming_no_real_member(members: Mapping[str, Any], kit: type) -> dict[str, Any]:
    """The rows of a bridge's member table whose ``contract``, ``spec`` or ``kit`` source names no such member."""
    from accelhal import Accelerator, BackendSpec
    from accelhal.plain_record import record_fields

    spec = BackendSpec(name="x", device_type="x", priority=1, accelerator="m:C", probe=lambda: None)  # type: ignore[arg-type,return-value]
    fields = {
        "contract": set(dir(Accelerator)) | {"*"},
        "spec": set(record_fields(spec)),
        "kit": {field.name for field in dataclasses.fields(kit)},
    }
    return {m: a for m, a in members.items() if a.source in fields and a.by not in fields[a.source]}
