"""DeepSpeed and Lightning train on the test device through accelhal: the same losses as on cpu.

The device arrives as an out-of-tree vendor's does: a distribution whose ``torch.backends``
entry point loads it when ``torch`` is imported, so DeepSpeed's training script, torchrun's
workers and Lightning's run it unchanged. ``ACCELHAL_ACCELERATOR`` forces the generic backend
on it; ``ACCELHAL_TESTDEV_COLLECTIVES=1`` makes the device register its collectives
(``hostgloo``: gloo through host copies, :mod:`tests.privateuse1.collectives`), which the
generic backend then reports as its communication backend. The four runs start together.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.compat import REPO, child_environment
from tests.compat.deepspeed_compare import side_by_side, train
from tests.compat.lightning_train import read_results
from tests.privateuse1 import device
from tests.privateuse1.child import write_autoload_distribution
from tests.privateuse1.vendor import write_vendor_package

pytestmark = [
    pytest.mark.privateuse1,
    pytest.mark.adapter,
    pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="needs the deepspeed extra"),
    pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="needs the lightning extra"),
]

ZERO1 = ("--runs", "1", "--steps", "5")
LIGHTNING_SCRIPT = REPO / "tests" / "compat" / "lightning_train.py"


def _lightning(site: Path, **env: str) -> list[dict[str, Any]]:
    env = child_environment(PYTHONPATH=f"{site}:{REPO}", PYTHONWARNINGS="ignore", **env)
    command = [sys.executable, str(LIGHTNING_SCRIPT), "--run=accelhal:32-true", "--run=cpu:32-true"]
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    return read_results(out.stdout)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """ZeRO-1 on two ranks of the device and of DeepSpeed's own CPU accelerator; Lightning on the device and cpu.

    Lightning runs twice: with the generic backend forced on the device, and with the npu
    backend chosen on the device renamed ``npu`` (:mod:`tests.privateuse1.vendor`).
    """
    site = tmp_path_factory.mktemp("site")
    write_autoload_distribution(site, device.DEFAULT_NAME)
    npu_site = write_vendor_package("npu", tmp_path_factory.mktemp("npu-site"))
    on_device = {"PYTHONPATH": f"{site}:{REPO}", "ACCELHAL_ACCELERATOR": "testdev", "ACCELHAL_TESTDEV_COLLECTIVES": "1"}
    runs: dict[str, Callable[[], Any]] = {
        "deepspeed-testdev": lambda: train("accelhal", world_size=2, extra=ZERO1, **on_device),
        "deepspeed-cpu": lambda: train("deepspeed", world_size=2, extra=ZERO1, DS_ACCELERATOR="cpu"),
        "lightning": lambda: _lightning(site, ACCELHAL_ACCELERATOR="testdev"),
        "lightning-npu": lambda: _lightning(npu_site),
    }
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(run) for name, run in runs.items()}
        return {name: future.result() for name, future in futures.items()}


def test_deepspeed_zero1_on_the_device_matches_deepspeeds_cpu_accelerator(trained: dict[str, Any]) -> None:
    ours, theirs = trained["deepspeed-testdev"], trained["deepspeed-cpu"]
    print("\n" + side_by_side(ours, theirs))
    assert (ours["accelerator_class"], ours["accelerator_name"]) == ("AccelhalDeepSpeedAccelerator", "testdev")
    assert (ours["device"], ours["backend"], ours["world_size"]) == ("testdev:0", "hostgloo", 2)
    assert (theirs["accelerator_class"], theirs["device"], theirs["backend"]) == ("CPU_Accelerator", "cpu", "gloo")
    assert ours["shm_op_built"] is False
    for rank, (mine, cpus) in enumerate(zip(ours["runs"]["1"], theirs["runs"]["1"], strict=True)):
        assert mine["losses"] == cpus["losses"], f"rank {rank}"
        assert mine["losses"][-1] < mine["losses"][0], f"rank {rank}: the loss did not go down"
        assert mine["checksum"] == cpus["checksum"] and mine["full_numel"] == cpus["full_numel"]
    assert ours["runs"]["1"][0]["losses"] != ours["runs"]["1"][1]["losses"]  # each rank trained on its own batch


def test_lightning_on_the_device_matches_lightnings_cpu_accelerator(trained: dict[str, Any]) -> None:
    ours, theirs = trained["lightning"]
    assert (ours["accelerator"], theirs["accelerator"]) == ("accelhal", "cpu")
    print(f"\nLightning losses, accelhal on testdev | Lightning's cpu:\n{ours['losses']}\n{theirs['losses']}")
    assert ours["accelerator_class"] == "AccelhalAccelerator" and theirs["accelerator_class"] == "CPUAccelerator"
    assert (ours["root_device"], ours["device"], ours["param_device"]) == ("testdev:0", "testdev:0", "testdev:0")
    assert theirs["root_device"] == "cpu"
    assert ours["losses"] == theirs["losses"] and len(ours["losses"]) == 16
    assert sum(ours["losses"][8:]) < sum(ours["losses"][:8]), "the loss did not go down"


def test_lightning_on_the_npu_backend_over_the_device_matches_lightnings_cpu_accelerator(
    trained: dict[str, Any],
) -> None:
    ours, theirs = trained["lightning-npu"]
    assert ours["accelerator_class"] == "AccelhalAccelerator" and theirs["accelerator_class"] == "CPUAccelerator"
    assert (ours["root_device"], ours["device"], ours["param_device"]) == ("npu:0", "npu:0", "npu:0")
    assert ours["losses"] == theirs["losses"] == trained["lightning"][1]["losses"]
