"""Real multi-process jobs through torchrun, set up by accelhal.distributed.

On cpu (CI): a 2-process gloo job checking collectives and DDP exactly, and a smoke run of
benchmarks/dist_bandwidth.py. On a machine with two GPUs (marker ``multigpu``): the benchmark
itself on nccl, checked for correctness (its timings are reported, never asserted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "distributed_gloo_worker.py"
BENCHMARK = ROOT / "benchmarks" / "dist_bandwidth.py"


def torchrun(script: Path, *args: str, nproc: int = 2, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` under ``torchrun --standalone`` (free port, local rendezvous) and check it exits 0."""
    launcher = ("MASTER_", "RANK", "WORLD_SIZE", "LOCAL_", "GROUP_", "ROLE_", "TORCHELASTIC_")
    child = {k: v for k, v in os.environ.items() if not k.startswith(launcher)}
    child.update(env)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    proc = subprocess.run(
        [*command, str(script), *args], env=child, capture_output=True, text=True, timeout=540, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    return proc


def test_two_process_gloo_job_through_torchrun(tmp_path: Path) -> None:
    torchrun(WORKER, str(tmp_path), ACCELHAL_ACCELERATOR="cpu", OMP_NUM_THREADS="1")

    records = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for rank, record in enumerate(records):
        assert record["rank"] == rank
        assert record["local_rank"] == rank
        assert record["world_size"] == 2
        assert record["source"] == "torchrun"
        assert (record["accelerator"], record["backend"], record["torch_backend"]) == ("cpu", "gloo", "gloo")
        assert record["device"] == "cpu"
        assert record["idempotent"] and record["destroyed"]
        assert "backend='nccl'" in record["conflicts"]["backend"]
        assert "WORLD_SIZE=2" in record["conflicts"]["world_size"]
        checks = record["checks"]
        assert {"all_reduce[n=65537]", "broadcast[src=1]", "all_gather", "ddp"} <= set(checks)
        failed = {name: detail for name, (passed, detail) in checks.items() if not passed}
        assert not failed


def _check_benchmark_result(result: dict, sizes_mib: list[int]) -> None:
    assert result["world_size"] == 2
    assert result["checks_passed"], [c for c in result["checks"] if not c["passed"]]
    assert "ddp" in {c["name"] for c in result["checks"]}
    assert [row["bytes"] >> 20 for row in result["sweep"]] == sizes_mib
    for row in result["sweep"]:
        assert row["accelhal_busbw_gbps"] > 0 and row["torch_busbw_gbps"] > 0
    assert result["ddp"]["parameters_identical_on_all_ranks"]


def test_bandwidth_benchmark_smoke_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "dist.json"
    args = ["--smoke", "--max-mib", "2", "--repeats", "2", "--warmup", "1", "--bytes-per-sample", str(4 << 20)]
    proc = torchrun(BENCHMARK, *args, "--out", str(out), ACCELHAL_ACCELERATOR="cpu", OMP_NUM_THREADS="1")
    result = json.loads(out.read_text())
    assert (result["accelerator"], result["backend"]) == ("cpu", "gloo")
    _check_benchmark_result(result, [1, 2])
    assert "accelhal busbw GB/s" in proc.stdout


@pytest.mark.multigpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_nccl_benchmark_on_two_gpus(tmp_path: Path) -> None:
    out = tmp_path / "dist.json"
    proc = torchrun(BENCHMARK, "--max-mib", "64", "--repeats", "5", "--out", str(out))
    result = json.loads(out.read_text())
    assert (result["accelerator"], result["backend"]) == ("cuda", "nccl")
    _check_benchmark_result(result, [1, 2, 4, 8, 16, 32, 64])
    print(proc.stdout)
