"""DeepSpeed trains on accelhal's accelerators exactly as on its own: ZeRO 0, 1 and 2, losses compared.

Each run is a separate process (``deepspeed_train.py``), so DeepSpeed's process-wide state
(its accelerator, its communication backend, the variable ``import deepspeed`` sets)
never leaks between runs or into this test process. World size 2 runs under torchrun.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compat import requires_deepspeed

pytestmark = [requires_deepspeed, pytest.mark.slow]

SCRIPT = Path(__file__).with_name("deepspeed_train.py")
REPO = SCRIPT.parents[2]
STAGES = ("0", "1", "2")


def train(accelerator: str, *, world_size: int, backend: str = "cpu", extra: tuple[str, ...] = ()) -> dict[str, object]:
    """Run the training script; returns its report (the accelerator used and each rank's losses per stage)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC", "LOCAL_", "RANK", "WORLD"))}
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env.update(ACCELHAL_ACCELERATOR=backend, DS_ACCELERATOR=backend, PYTHONPATH=path, OMP_NUM_THREADS="1")
    launcher = [sys.executable]
    if world_size > 1:
        launcher += ["-m", "torch.distributed.run", f"--nproc-per-node={world_size}", "--standalone"]
    cmd = [*launcher, str(SCRIPT), "--accelerator", accelerator, *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))
    report: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return report


def assert_same_training(ours: dict[str, object], theirs: dict[str, object], stages: tuple[str, ...]) -> None:
    import torch

    assert ours["accelerator_class"] == "AccelhalDeepSpeedAccelerator"
    assert theirs["accelerator_class"] != "AccelhalDeepSpeedAccelerator"
    assert ours["world_size"] == theirs["world_size"]
    assert ours["backend"] == theirs["backend"]
    assert ours["device"] == theirs["device"]
    losses_ours, losses_theirs = ours["losses"], theirs["losses"]
    assert isinstance(losses_ours, dict) and isinstance(losses_theirs, dict)
    assert sorted(losses_ours) == sorted(losses_theirs) == sorted(stages)
    for stage in stages:
        a = torch.tensor(losses_ours[stage], dtype=torch.float64)
        b = torch.tensor(losses_theirs[stage], dtype=torch.float64)
        assert a.shape == b.shape and a.shape[0] == ours["world_size"] and a.shape[1] >= 4
        assert torch.allclose(a, b, rtol=1e-6, atol=0.0), f"stage {stage}: {a.tolist()} vs DeepSpeed's {b.tolist()}"
        assert bool((a[:, -1] < a[:, 0]).all()), f"stage {stage}: the loss did not go down: {a.tolist()}"


@pytest.mark.parametrize("world_size", [1, 2])
def test_zero_stages_match_deepspeeds_own_cpu_accelerator(world_size: int) -> None:
    ours = train("accelhal", world_size=world_size)
    theirs = train("deepspeed", world_size=world_size)
    assert theirs["accelerator_class"] == "CPU_Accelerator"
    assert ours["backend"] == "gloo"
    assert ours["shm_op_built"] is False and theirs["shm_op_built"] is False
    assert_same_training(ours, theirs, STAGES)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_zero2_on_cuda_matches_deepspeeds_own_cuda_accelerator(dtype: str) -> None:
    extra = ("--stages", "2", "--steps", "6", "--dtype", dtype)
    ours = train("accelhal", world_size=1, backend="cuda", extra=extra)
    theirs = train("deepspeed", world_size=1, backend="cuda", extra=extra)
    assert theirs["accelerator_class"] == "CUDA_Accelerator"
    assert ours["backend"] == "nccl"
    assert ours["device"] == "cuda:0"
    print(f"\nZeRO-2 {dtype} on cuda, losses: accelhal {ours['losses']} | DeepSpeed {theirs['losses']}")
    assert_same_training(ours, theirs, ("2",))
