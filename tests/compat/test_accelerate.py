"""Accelerate and transformers' Trainer on accelhal: the same losses as Accelerate's own cpu path.

Training runs in fresh processes (``accelerate_train.py``): Accelerate's state is a process-wide
singleton, and a launched run needs its own ranks. Two processes start together: one runs
every single-process comparison (Accelerate's loop in fp32, bf16 and fp16, the Trainer, and
the adapter's other effects), the other is ``accelerate launch`` with two ranks (gloo) running
accelhal's and then Accelerate's own cpu path (on the gloo group the first run started).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from typing import Any

import pytest

from tests.compat import child_environment, free_port
from tests.compat.accelerate_train import finish, outputs, start, start_command

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("accelerate") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the accelerate extra and transformers: pip install '.[test]' in the clone",
)

SINGLE = (
    *("accelhal", "accelerate-cpu", "accelhal:bf16", "accelerate-cpu:bf16", "accelhal:fp16", "accelerate-cpu:fp16"),
    *("trainer-accelhal", "trainer-cpu", "checks"),
)
LAUNCHED = ("accelhal", "accelerate-cpu", "trainer-accelhal", "trainer-cpu")
Runs = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    # No user configuration of accelerate launch is read; every comparison is with Accelerate's
    # cpu path, also on a machine with a GPU.
    env = {"HF_HOME": str(tmp_path_factory.mktemp("hf-home")), "ACCELHAL_ACCELERATOR": "cpu"}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes=2"]
    launch += ["--num_machines=1", "--mixed_precision=no", "--dynamo_backend=no", f"--main_process_port={free_port()}"]
    return finish({"single": start(SINGLE, **env), "launched": start(LAUNCHED, launch, **env)})


OWN_SCRIPT = "accelerate.test_utils.scripts.test_script"
"""Accelerate's own distributed test script (installed with Accelerate)."""


@pytest.fixture(scope="module")
def own_script(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Accelerate's own script under torchrun with two ranks on the host: its own cpu path, and with the adapter.

    ``python -m accelhal.compat.accelerate`` installs the adapter in each rank, then runs the
    script. Accelerate's own run has ``ACCELERATE_USE_CPU`` (``accelerate launch --cpu``): without it,
    Accelerate from 1.13 runs each rank of a host launch alone (``NO``, one process). Each run has
    its own working directory (the script writes a file there).
    """
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--standalone"]
    env = {"ACCELHAL_ACCELERATOR": "cpu", "CUDA_VISIBLE_DEVICES": ""}
    own = start_command(
        [*torchrun, "-m", OWN_SCRIPT], {**env, "ACCELERATE_USE_CPU": "1"}, tmp_path_factory.mktemp("own")
    )
    ours = [*torchrun, "-m", "accelhal.compat.accelerate", "-m", OWN_SCRIPT]
    return outputs({"own": own, "accelhal": start_command(ours, env, tmp_path_factory.mktemp("accelhal"))})


def _run(records: list[dict[str, Any]], spec: str) -> dict[str, Any]:
    return next(record for record in records if record["run"] == spec)


def _trained(record: dict[str, Any]) -> list[float]:
    losses: list[float] = record["losses"]
    assert len(losses) == 8
    assert sum(losses[4:]) < sum(losses[:4]), f"the loss did not go down: {losses}"
    return losses


def _table(title: str, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Print the losses side by side (``pytest -s`` shows them)."""
    print(f"\n{title}\nstep  {'accelhal':>20}  {'Accelerate':>20}")
    for step, (a, b) in enumerate(zip(ours["losses"], theirs["losses"], strict=True)):
        print(f"{step:>4}  {a!r:>20}  {b!r:>20}")


@pytest.mark.parametrize("precision", ["", ":bf16"])
def test_same_losses_as_accelerates_cpu_path(trained: Runs, precision: str) -> None:
    ours = _run(trained["single"], f"accelhal{precision}")
    theirs = _run(trained["single"], f"accelerate-cpu{precision}")
    _table(f"Accelerate loop{precision or ' fp32'}: accelhal (cpu backend) | Accelerator(cpu=True)", ours, theirs)
    for record in (ours, theirs):
        assert (record["device"], record["param_device"], record["batch_device"]) == ("cpu", "cpu", "cpu")
        assert record["distributed_type"] == "NO" and record["world_size"] == 1
    assert ours["autocast"] == theirs["autocast"] == ("torch.bfloat16" if precision else None)
    assert _trained(ours) == _trained(theirs)


@pytest.mark.parametrize("precision", ["", ":bf16", ":fp16"])
def test_every_member_of_the_accelerator_and_its_state_as_accelerates_own(trained: Runs, precision: str) -> None:
    """Every public attribute of ``Accelerator`` and its state (methods aside): ``Accelerator(cpu=True)``'s."""
    ours = _run(trained["single"], f"accelhal{precision}")["members"]
    theirs = _run(trained["single"], f"accelerate-cpu{precision}")["members"]
    assert len(ours) > 60
    assert {k: (v, theirs.get(k)) for k, v in ours.items() if v != theirs.get(k)} == {}
    assert ours.keys() == theirs.keys()


def test_every_member_under_accelerate_launch_as_accelerates_own(trained: Runs) -> None:
    ours = [r["members"] for r in trained["launched"] if r["run"] == "accelhal"]
    theirs = [r["members"] for r in trained["launched"] if r["run"] == "accelerate-cpu"]
    assert len(ours) == len(theirs) == 2
    for mine, accelerates in zip(ours, theirs, strict=True):
        assert {k: (v, accelerates.get(k)) for k, v in mine.items() if v != accelerates.get(k)} == {}


def test_bf16_took_effect(trained: Runs) -> None:
    assert _run(trained["single"], "accelhal:bf16")["losses"] != _run(trained["single"], "accelhal")["losses"]


def test_fp16_on_the_host_trains_in_float32_as_accelerate_does_and_says_so(trained: Runs) -> None:
    ours, theirs = _run(trained["single"], "accelhal:fp16"), _run(trained["single"], "accelerate-cpu:fp16")
    # Accelerate's own cpu path accepts fp16 and trains in fp32 without a word; with accelhal, a warning says so.
    for record in (ours, theirs):
        assert record["mixed_precision"] == "fp16" and record["autocast"] is None
    assert ours["warnings"] == [
        "accelhal: mixed_precision='fp16' on the cpu backend (the host): Accelerate does not autocast fp16 there "
        "and trains in float32, as Accelerator(cpu=True) does; choose 'bf16' for mixed precision"
    ]
    assert theirs["warnings"] == [] == _run(trained["single"], "accelhal")["warnings"]
    assert ours["losses"] == theirs["losses"] == _run(trained["single"], "accelerate-cpu")["losses"]


def test_two_processes_under_accelerate_launch_same_losses_as_accelerates_own(trained: Runs) -> None:
    ours = [r for r in trained["launched"] if r["run"] == "accelhal"]
    theirs = [r for r in trained["launched"] if r["run"] == "accelerate-cpu"]
    assert [r["rank"] for r in ours] == [r["rank"] for r in theirs] == [0, 1]
    for mine, accelerates in zip(ours, theirs, strict=True):
        _table(f"accelerate launch, rank {mine['rank']} of 2: accelhal | Accelerator(cpu=True)", mine, accelerates)
        assert (mine["distributed_type"], mine["backend"], mine["world_size"]) == ("MULTI_CPU", "gloo", 2)
        assert (accelerates["distributed_type"], accelerates["backend"]) == ("MULTI_CPU", "gloo")
        assert mine["model_class"] == accelerates["model_class"] == "DistributedDataParallel"
        assert mine["local_rank"] == mine["rank"]
        assert _trained(mine) == _trained(accelerates)
    assert ours[0]["losses"] != ours[1]["losses"]  # each rank trained on its own shard


def test_trainer_under_accelerate_launch_same_losses_as_with_use_cpu(trained: Runs) -> None:
    ours = [r for r in trained["launched"] if r["run"] == "trainer-accelhal"]
    theirs = [r for r in trained["launched"] if r["run"] == "trainer-cpu"]
    assert [r["rank"] for r in ours] == [r["rank"] for r in theirs] == [0, 1]
    for mine, transformers in zip(ours, theirs, strict=True):
        _table(f"Trainer, rank {mine['rank']} of 2: accelhal | TrainingArguments(use_cpu=True)", mine, transformers)
        assert (mine["distributed_type"], mine["backend"], mine["world_size"]) == ("MULTI_CPU", "gloo", 2)
        assert (mine["param_device"], mine["batch_device"]) == ("cpu", "cpu")
        assert mine["args_device"] == transformers["args_device"] == "cpu:0"  # Accelerate's launched host device
        assert mine["n_gpu"] == transformers["n_gpu"] == 0  # the host is no GPU, as with use_cpu=True
        assert _trained(mine) == _trained(transformers)


def test_trainer_same_losses_as_trainer_on_cpu(trained: Runs) -> None:
    ours, theirs = _run(trained["single"], "trainer-accelhal"), _run(trained["single"], "trainer-cpu")
    _table("Trainer (2-layer Llama): accelhal (cpu backend) | TrainingArguments(use_cpu=True)", ours, theirs)
    assert (ours["args_device"], ours["param_device"], ours["batch_device"], ours["n_gpu"]) == ("cpu", "cpu", "cpu", 0)
    assert ours["training_args_imported_before_install"] is False  # patched by the import hook
    assert _trained(ours) == _trained(theirs)


def test_seeding_memory_and_checkpointed_generators(trained: Runs) -> None:
    checks = _run(trained["single"], "checks")
    assert checks["installed"] is True and checks["backend_name"] == "cpu" and checks["device"] == "cpu"
    assert checks["device_seed"] == 1234  # accelerate.utils.set_seed reached the backend's generator
    assert checks["max_memory"] == checks["own_max_memory"] == ["cpu"]
    assert checks["device_rng_restored"] is True
    assert checks["checkpoint_files"] == ["random_states_0.pkl"]  # the host has no device generator to add


def test_errors_name_the_backend_and_what_is_wrong(trained: Runs) -> None:
    checks = _run(trained["single"], "checks")
    assert checks["unknown_backend"].startswith("UnknownBackendError: unknown accelerator 'nosuchbackend'")
    assert checks["after_uninstall"]["install_once_state_exists"] == (
        "ConfigurationError: Accelerate's state already exists (on cpu): call install() before the first "
        "Accelerator(), PartialState() or TrainingArguments(), or reset it first "
        "(accelerate.state.AcceleratorState._reset_state(reset_partial_state=True))"
    )


def test_uninstall_gives_accelerate_its_own_code_back(trained: Runs) -> None:
    checks = _run(trained["single"], "checks")
    assert checks["after_uninstall"]["installed"] is False
    assert checks["after_uninstall"]["get_max_memory_is_accelerates"] is True
    assert checks["context_manager"] == {"inside": True, "backend": "cpu", "after": False}


def test_import_patches_nothing_and_imports_neither_accelerate_nor_torch() -> None:
    code = (
        "import sys, accelhal.compat.accelerate as a\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'accelerate', 'transformers', 'torch'}), "
        "a.is_installed())"
    )
    command = [sys.executable, "-c", code]
    out = subprocess.run(command, capture_output=True, text=True, env=child_environment(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False"]


MILESTONES = (
    "Distributed environment: DistributedType.MULTI_CPU  Backend: gloo",
    "Num processes: 2",
    "**Training integration test**",
    "Training yielded the same results on one CPU or distributed setup with no batch split.",
    "setup with batch split.",
    "BF16 training check.",
    "**Breakpoint trigger test**",
)
"""What the script prints as it passes its checks (two ranks' lines interleave, so they are counted, not compared)."""
FP16_CHECK = "FP16 training check."
"""Printed where the script trains in fp16: on the host from Accelerate 1.5.0 (before, on GPUs only)."""


def test_accelerates_own_distributed_script_passes_with_the_adapter(
    own_script: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    own, ours = own_script["own"], own_script["accelhal"]
    assert own.returncode == 0, own.stderr[-5000:]
    assert ours.returncode == 0, ours.stderr[-5000:]
    counted = {milestone: (ours.stdout.count(milestone), own.stdout.count(milestone)) for milestone in MILESTONES}
    assert all(mine == theirs > 0 for mine, theirs in counted.values()), counted
    assert ours.stdout.count(FP16_CHECK) == own.stdout.count(FP16_CHECK)
    fp16_warning = "accelhal: mixed_precision='fp16' on the cpu backend (the host)"
    assert (fp16_warning in ours.stderr) is (FP16_CHECK in own.stdout)
