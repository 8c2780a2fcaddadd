"""``accelhal doctor`` finds each problem when it is staged, and says how to fix it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.torch_features import needs_device_autoload, needs_torch_accelerator
from tests.venvs import build_wheel, fresh_venv, pip_install


def problems(result: Result) -> dict[str, dict[str, Any]]:
    assert "Traceback" not in result.output, result.output
    data = result.json()
    assert data["healthy"] is (result.returncode == 0)
    return {p["code"]: p for p in data["problems"]}


def test_healthy_machine_exits_0_with_warnings_as_errors_and_no_pipe_left_open() -> None:
    result = run_accelhal("doctor", env={"PYTHONWARNINGS": "error"})  # an unclosed file: "Exception ignored in"
    assert result.returncode == 0, result.output
    assert "No problems found." in result.stdout
    assert "Exception ignored" not in result.stderr, result.stderr
    assert "ResourceWarning" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("env", "code", "evidence"),
    [
        ({"ACCELHAL_ACCELERATOR": "tpu"}, "forced-unavailable", "known accelerators: "),
        ({"ACCELHAL_ACCELERATOR": "cpu", "DS_ACCELERATOR": "cuda"}, "override-conflict", "DS_ACCELERATOR='cuda'"),
        ({"ACCELHAL_STRICT": "maybe"}, "bad-variable", "ACCELHAL_STRICT='maybe'"),
        ({"LOCAL_RANK": "²"}, "bad-variable", "LOCAL_RANK must be a non-negative integer as set by a launcher"),
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "²"}, "bad-variable", "OMPI_COMM_WORLD_LOCAL_RANK must be a non-negative"),
        ({"LOCAL_SIZE": "²"}, "bad-variable", "LOCAL_SIZE must be an integer >= 1"),
    ],
)
def test_configuration_problems(env: dict[str, str], code: str, evidence: str) -> None:
    result = run_accelhal("doctor", "--json", env=env)
    assert result.returncode == 1
    found = problems(result)
    assert code in found, found
    assert evidence in found[code]["detail"]
    assert found[code]["fix"]


def test_forced_backend_without_device(staged) -> None:
    found = problems(staged("doctor", "--json", env={"ACCELHAL_ACCELERATOR": "staged_nodev"}))
    assert "runtime sees no device" in found["forced-unavailable"]["detail"]
    assert "Unset ACCELHAL_ACCELERATOR" in found["forced-unavailable"]["fix"]  # a sentence


def test_plugin_failures(staged) -> None:
    result = staged("doctor", "--json")
    assert result.returncode == 1
    found = problems(result)
    assert "cannot be imported" in found["plugin-failed"]["detail"]
    assert "ACCELHAL_BLOCK_PLUGINS=staged_broken" in found["plugin-failed"]["fix"]
    assert "staged probe failure" in found["backend-broken"]["detail"]
    human = staged("doctor")
    assert "plugin 'staged_broken' cannot be imported" in human.stdout
    assert "fix:" in human.stdout


@pytest.mark.parametrize("value", ["", "-1", "none", " NoDevFiles "])
def test_visible_devices_variable_that_hides_every_device(staged, value: str) -> None:
    found = problems(staged("doctor", "--json", env={"STAGED_VISIBLE_DEVICES": value}))
    assert "hides every staged_nodev device" in found["devices-hidden"]["title"]


def test_visible_devices_naming_devices_that_do_not_exist(staged) -> None:
    found = problems(staged("doctor", "--json", env={"STAGED_VISIBLE_DEVICES": "0,1"}))
    assert "names 2 staged_nodev device(s), but 0 exist" in found["devices-missing"]["title"]


ACTIVE_PLUGIN = """
    from accelhal import BackendSpec, Verdict, hookimpl
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    class StagedActive(CpuAccelerator):
        _name = "staged_active"
        _visible_devices_envs = ("STAGED_ACTIVE_VISIBLE_DEVICES",)

    @hookimpl
    def accelhal_register_backends(register):
        register(BackendSpec(name="staged_active", device_type="cpu", priority=300,
                             probe=lambda: Verdict.available("staged"), accelerator=StagedActive,
                             visible_devices_envs=("STAGED_ACTIVE_VISIBLE_DEVICES",)))
"""


@pytest.mark.parametrize(("visible", "local_size", "flagged"), [("0,1,2", "2", True), ("1,0", "2", False)])
def test_visible_devices_compared_with_the_active_backends_count(
    install_distribution: Callable[..., Path], visible: str, local_size: str, flagged: bool
) -> None:
    """The active backend's device_count() (LOCAL_SIZE for a cpu-derived one) against the variable."""
    site = install_distribution("staged-active", {"staged_active": ACTIVE_PLUGIN}, {"staged_active": "staged_active"})
    env = {"PYTHONPATH": str(site.parent), "STAGED_ACTIVE_VISIBLE_DEVICES": visible, "LOCAL_SIZE": local_size}
    result = run_accelhal("doctor", "--json", env=env)
    assert result.json()["active"] == "staged_active"
    found = problems(result)
    assert ("devices-missing" in found) is flagged
    if flagged:
        assert "names 3 staged_active device(s), but 2 exist" in found["devices-missing"]["title"]


SIMULATED_NPU = """
import sys, types, torch
torch.utils.rename_privateuse1_backend("npu")
module = types.ModuleType("torch_npu_simulated")
module.is_available = lambda: True
module.device_count = lambda: 1
torch._register_device_module("npu", module)
from accelhal.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


@needs_torch_accelerator
def test_accelhal_disagrees_with_torch_accelerator() -> None:
    """torch.accelerator reports a (simulated) npu that accelhal has no usable backend for."""

    def doctor(**env: str) -> Result:  # the code imports torch first: forked from the warm interpreter
        return run_accelhal("doctor", "--json", code=SIMULATED_NPU, env=env, code_after_torch=True)

    found = problems(doctor())
    assert "torch.accelerator uses 'npu' but accelhal chose 'cpu'" in found["torch-disagrees"]["title"]
    forced = problems(doctor(ACCELHAL_ACCELERATOR="cpu"))
    assert "torch-disagrees" not in forced  # forcing cpu is a choice, not a problem


BROKEN_VENDOR_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "broken-torch-vendor"
version = "0.0.1"

[project.entry-points."torch.backends"]
broken_vendor = "broken_torch_vendor:autoload"
"""


@pytest.mark.slow
@needs_device_autoload
def test_vendor_distribution_that_breaks_import_torch(tmp_path: Path) -> None:
    """A real distribution whose torch.backends entry point raises, installed into a fresh venv."""
    source = tmp_path / "src"
    (source / "broken_torch_vendor").mkdir(parents=True)
    (source / "pyproject.toml").write_text(BROKEN_VENDOR_PYPROJECT)
    (source / "broken_torch_vendor" / "__init__.py").write_text(
        textwrap.dedent(
            """
            raise ImportError("libvendor_runtime.so: cannot open shared object file")

            def autoload():
                pass
            """
        )
    )
    python = fresh_venv(tmp_path / "venv")  # reuses this interpreter's torch and accelhal
    pip_install(python, build_wheel(source, tmp_path))
    python = str(python)

    result = run_accelhal("doctor", "--json", python=python)
    assert result.returncode == 1, result.output
    found = problems(result)
    autoload = found["torch-autoload"]
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in autoload["fix"]
    assert "broken_vendor = broken_torch_vendor:autoload from broken-torch-vendor 0.0.1" in autoload["detail"]
    assert "libvendor_runtime.so" in autoload["detail"]

    human = run_accelhal("doctor", python=python)
    assert "breaks 'import torch'" in " ".join(human.stdout.split())
    assert "Traceback" not in human.output
    healed = run_accelhal("doctor", "--json", python=python, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert "torch-autoload" not in problems(healed)
