"""The command on a real CUDA machine: `python -m pytest -m cuda tests/cli` on the GPU machine."""

from __future__ import annotations

import pytest

from accelhal.selection import registry
from tests.cli.conftest import run_accelhal
from tests.cli.test_doctor import problems

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def cuda_backend_registered() -> None:
    if "cuda" not in registry().names():
        pytest.skip("the cuda backend is not registered in this checkout")


def device_count() -> int:
    import torch

    return int(torch.cuda.device_count())  # NVML-based: no CUDA context in this process


def test_info_describes_every_gpu() -> None:
    result = run_accelhal("info", "--json")
    assert result.returncode == 0, result.output
    acc = result.json()["accelerator"]
    assert acc["name"] == "cuda" and acc["device_count"] == device_count()
    assert all(d["total_memory"] > d["available_memory"] > 0 for d in acc["devices"])
    human = run_accelhal("info")
    assert "active backend: cuda" in human.stdout


def test_doctor_is_healthy_and_agrees_with_torch() -> None:
    result = run_accelhal("doctor", "--json")
    assert result.returncode == 0, result.output
    assert result.json()["active"] == "cuda"


def test_doctor_creates_no_cuda_context() -> None:
    code = (
        "import sys, torch\nfrom accelhal.cli.diagnosis.checks import diagnose\n"
        "diagnose()\nprint(torch.cuda.is_initialized())\n"
    )
    result = run_accelhal(code=code)
    assert result.stdout.strip() == "False", result.output


def test_visible_devices_naming_a_missing_gpu() -> None:
    n = device_count()
    visible = ",".join([*map(str, range(n)), str(n + 5)])
    found = problems(run_accelhal("doctor", "--json", env={"CUDA_VISIBLE_DEVICES": visible}))
    assert f"names {n + 1} cuda device(s), but {n} exist" in found["devices-missing"]["title"]


@pytest.mark.parametrize("value", ["", "-1"])
def test_visible_devices_hiding_every_gpu(value: str) -> None:
    found = problems(run_accelhal("doctor", "--json", env={"CUDA_VISIBLE_DEVICES": value}))
    assert "hides every cuda device" in found["devices-hidden"]["title"]


def test_explain_cuda_says_active() -> None:
    result = run_accelhal("explain", "cuda", "--json")
    assert result.json()["outcome"] == "active"
