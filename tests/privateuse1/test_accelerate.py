"""Accelerate and transformers' Trainer train on the test device through accelhal: the same losses as on cpu.

The device arrives as an out-of-tree vendor's does (a ``torch.backends`` entry point loads
it with ``import torch``); ``ACCELHAL_ACCELERATOR`` forces the generic backend on it.
Accelerate and transformers do not see it by themselves: their own runs, in the same
process, land on ``cpu`` and give the losses to compare with. Three processes start together:
the single-process runs (the device without collectives), ``torchrun`` with two ranks on
``testdev:0`` and ``testdev:1`` (the device's collectives, ``hostgloo``), and ``torchrun`` with
two ranks of Accelerate's own cpu path.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from tests.compat import REPO
from tests.compat.accelerate_train import finish, start
from tests.privateuse1 import device
from tests.privateuse1.child import write_autoload_distribution

pytestmark = [
    pytest.mark.adapter,
    pytest.mark.privateuse1,
    pytest.mark.skipif(
        importlib.util.find_spec("accelerate") is None or importlib.util.find_spec("transformers") is None,
        reason="needs the accelerate extra and transformers",
    ),
]

SINGLE = ("accelhal", "accelerate", "accelhal:bf16", "checks", "trainer", "trainer-accelhal")
Runs = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    site = tmp_path_factory.mktemp("site")
    write_autoload_distribution(site, device.DEFAULT_NAME)
    env = {
        "PYTHONPATH": f"{site}:{REPO}",
        "ACCELHAL_ACCELERATOR": device.DEFAULT_NAME,
        "HF_HOME": str(tmp_path_factory.mktemp("hf-home")),
    }
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--standalone"]
    return finish(
        {  # the launched ranks with the device's collectives, the single process without them
            "single": start(SINGLE, **env),
            "launched": start(["accelhal"], torchrun, ACCELHAL_TESTDEV_COLLECTIVES="1", **env),
            "launched-cpu": start(["accelerate-cpu"], torchrun, **env),
        }
    )


def _run(records: list[dict[str, Any]], spec: str) -> dict[str, Any]:
    return next(record for record in records if record["run"] == spec)


def _same_trained_losses(ours: dict[str, Any], theirs: dict[str, Any], title: str) -> None:
    print(f"\n{title}\n{ours['losses']}\n{theirs['losses']}")
    assert len(ours["losses"]) == 8
    assert sum(ours["losses"][4:]) < sum(ours["losses"][:4]), "the loss did not go down"
    assert ours["losses"] == theirs["losses"]


def test_accelerator_trains_on_the_device_with_accelerates_cpu_losses(trained: Runs) -> None:
    ours, theirs = _run(trained["single"], "accelhal"), _run(trained["single"], "accelerate")
    assert theirs["device"] == theirs["param_device"] == "cpu"  # the device is invisible to Accelerate itself
    assert (ours["device"], ours["param_device"], ours["batch_device"]) == ("testdev:0", "testdev:0", "testdev:0")
    assert ours["distributed_type"] == "NO"
    # Module.to() replaced the parameters on the device; the optimizer made before prepare() follows them.
    _same_trained_losses(ours, theirs, "Accelerate loop, accelhal on testdev | Accelerate's own (cpu):")


def test_two_ranks_on_the_device_with_the_devices_collectives(trained: Runs) -> None:
    ours, theirs = trained["launched"], trained["launched-cpu"]
    assert [r["rank"] for r in ours] == [r["rank"] for r in theirs] == [0, 1]
    for rank, (mine, accelerates) in enumerate(zip(ours, theirs, strict=True)):
        assert (mine["distributed_type"], mine["backend"], mine["world_size"]) == ("MULTI_GPU", "hostgloo", 2)
        assert mine["device"] == mine["param_device"] == mine["batch_device"] == f"testdev:{rank}"
        assert mine["model_class"] == "DistributedDataParallel"
        assert (accelerates["distributed_type"], accelerates["backend"]) == ("MULTI_CPU", "gloo")
        _same_trained_losses(mine, accelerates, f"torchrun rank {rank}, accelhal on testdev | Accelerator(cpu=True):")


def test_trainer_trains_on_the_device_with_the_trainers_cpu_losses(trained: Runs) -> None:
    ours, theirs = _run(trained["single"], "trainer-accelhal"), _run(trained["single"], "trainer")
    assert theirs["args_device"] == theirs["param_device"] == "cpu"  # transformers' own choice
    assert (ours["args_device"], ours["param_device"], ours["batch_device"]) == ("testdev:0", "testdev:0", "testdev:0")
    assert ours["device"] == "testdev:0" and ours["n_gpu"] == 1
    assert ours["training_args_imported_before_install"] is True  # patched at install()
    _same_trained_losses(ours, theirs, "Trainer, accelhal on testdev | transformers' own (cpu):")


def test_bf16_is_refused_naming_what_the_device_lacks(trained: Runs) -> None:
    error = _run(trained["single"], "accelhal:bf16")["error"]
    assert error.startswith(
        "ConfigurationError: mixed_precision='bf16' autocasts to torch.bfloat16, which the testdev backend lacks: "
        "torch's autocast on 'testdev' fails: AssertionError: "
    )
    assert "get_amp_supported_dtype" in error and error.endswith("; choose 'no'")


def test_seeding_memory_and_checkpointed_generators_reach_the_device(trained: Runs) -> None:
    checks = _run(trained["single"], "checks")
    assert (checks["backend_name"], checks["device"]) == ("testdev", "testdev:0")
    assert checks["device_seed"] == 1234
    assert checks["own_max_memory"] == ["cpu"] and checks["max_memory"] == ["0", "1", "cpu"]
    assert checks["device_rng_restored"] is True
    assert checks["checkpoint_files"] == ["accelhal_rng_states_0.pt", "random_states_0.pkl"]
    assert checks["after_uninstall"]["device"] == "cpu"  # Accelerate's own choice again


def test_a_launched_run_on_a_device_without_collectives_is_refused_by_name(trained: Runs) -> None:
    checks = _run(trained["single"], "checks")
    assert checks["launched_without_collectives"] == (
        "DistributedSetupError: the testdev backend has no torch.distributed backend (communication_backend_name() "
        "is ''), so Accelerate cannot start a multi-process run on it; register one for the device type 'testdev' "
        "or pass PartialState(backend=...)"
    )
    assert checks["device"] == "testdev:0"  # the refused state was not kept: Accelerator() chose again
