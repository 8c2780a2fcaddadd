"""Helpers for the command's tests: run ``python -m accelhal`` in a child process, stage plugins.

Staged plugins are real distributions laid out as pip lays them out (the
``install_distribution`` fixture of ``tests/conftest.py``), in a directory the child
process gets on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests import warm

if TYPE_CHECKING:
    from tests.cli.launch import Launcher

_CLEARED = ("ACCELHAL_", "DS_ACCELERATOR", "STAGED_", "TORCH_DEVICE_BACKEND_AUTOLOAD", "LOCAL_SIZE", "LOCAL_WORLD_SIZE")


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The current environment without accelhal's variables (and without colour), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CLEARED) and k not in ("COLUMNS", "LINES")}
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


def run_accelhal(
    *args: str,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    code: str | None = None,
    code_after_torch: bool = False,
) -> Result:
    """``python -m accelhal ARGS`` (or ``python -c CODE ARGS``) in a child process.

    The ``-m`` form, and the ``-c`` form with ``code_after_torch`` (code that does not care
    whether torch was imported before it), are forked from a warm interpreter that imported
    torch (:mod:`tests.warm`) wherever that is the same as a fresh one.
    """
    if code is None:
        proc = warm.run_module("accelhal", list(args), clean_env(env), python, timeout=300)
    elif code_after_torch:
        proc = warm.run_code(code, list(args), clean_env(env), python, timeout=300)
    else:
        command = [python, "-c", code, *args]
        proc = subprocess.run(command, env=clean_env(env), capture_output=True, text=True, timeout=300, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


STAGED_PLUGINS = """
    from accelhal import BackendSpec, Verdict, hookimpl

    def _no_device():
        return Verdict.no_device("staged: the runtime sees no device")

    def _raises():
        raise RuntimeError("staged probe failure")

    def _available():
        return Verdict.available("staged: always available")

    @hookimpl
    def accelhal_register_backends(register):
        common = dict(accelerator="staged_plugins_never_imported:Accelerator", comm_backend="gloo")
        register(BackendSpec(name="staged_missing", device_type="stagedm", priority=700, probe=_available,
                             requires=("accelhal_no_such_module",), **common))
        register(BackendSpec(name="staged_nodev", device_type="stagedn", priority=600, probe=_no_device,
                             visible_devices_envs=("STAGED_VISIBLE_DEVICES",), **common))
        register(BackendSpec(name="staged_raises", device_type="stagedr", priority=500, probe=_raises, **common))
        register(BackendSpec(name="staged_low", device_type="stagedl", priority=50, probe=_available,
                             accelerator="staged_low_class:LowAccelerator"))
"""

STAGED_LOW_CLASS = """
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    class LowAccelerator(CpuAccelerator):  # available below cpu: its class is loaded and checked, never chosen
        _name = "staged_low"
        device_type = "stagedl"
"""

STAGED_BLOCKABLE = """
    from accelhal import BackendSpec, Verdict, hookimpl

    @hookimpl
    def accelhal_register_backends(register):
        register(BackendSpec(name="staged_blockme", device_type="stagedb", priority=400,
                             probe=lambda: Verdict.no_device("staged"), accelerator="x:Y"))
"""


@pytest.fixture
def staged_path(install_distribution: Callable[..., Path]) -> str:
    """A directory holding the staged plugin distributions, for ``PYTHONPATH``."""
    dist_info = install_distribution(
        "staged-plugins",
        {"staged_plugins": STAGED_PLUGINS, "staged_blockable": STAGED_BLOCKABLE, "staged_low_class": STAGED_LOW_CLASS},
        {"stagedplugins": "staged_plugins", "staged_blockme": "staged_blockable"},
    )
    install_distribution(
        "staged-broken",
        {"staged_broken": "raise ImportError('staged: this plugin cannot be imported')\n"},
        {"staged_broken": "staged_broken"},
    )
    return str(dist_info.parent)


@pytest.fixture
def staged(staged_path: str) -> Callable[..., Result]:
    """Run the command with the staged plugins installed."""

    def run(*args: str, env: Mapping[str, str] | None = None) -> Result:
        return run_accelhal(*args, env={"PYTHONPATH": staged_path, **(env or {})})

    return run


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """Start commands as a shell starts jobs (:class:`tests.cli.launch.Launcher`), for the module's tests."""
    from tests.cli.launch import Launcher

    started = Launcher(tmp_path_factory.mktemp("launched"))
    yield started
    started.close()
