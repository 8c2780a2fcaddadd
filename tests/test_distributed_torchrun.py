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

from tests.bounded import run_bounded

pytestmark = pytest.mark.slow  # processes of their own for seconds each

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "distributed_gloo_worker.py"
BENCHMARK = ROOT / "benchmarks" / "dist_bandwidth.py"

TIMEOUT_SECONDS = 120
"""How long one torchrun job may take (a few seconds when all is well, under a minute on two loaded cores)."""
WATCHDOG_SECONDS = TIMEOUT_SECONDS - 30
"""The gloo worker's own limit: a rank still running then prints its threads' stacks and exits 1."""
TERMINATE_GRACE_SECONDS = 40
"""After SIGTERM, how long torchrun gets to stop its workers (it waits 30 s before it kills them)."""


def torchrun(
    script: Path, *args: str, nproc: int = 2, timeout: float = TIMEOUT_SECONDS, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` under ``torchrun --standalone`` (free port, local rendezvous) and check it exits 0.

    A job still running after ``timeout`` seconds is stopped (SIGTERM to torchrun, which passes it
    on to its workers; then SIGKILL) and fails the test with what it printed so far.
    """
    launcher = ("MASTER_", "RANK", "WORLD_SIZE", "LOCAL_", "GROUP_", "ROLE_", "TORCHELASTIC_")
    child = {k: v for k, v in os.environ.items() if not k.startswith(launcher)}
    child.update(env)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    command += [str(script), *args]
    done = run_bounded(
        command,
        env=child,
        cwd=ROOT,
        timeout=timeout,
        stop=_stop,
        describe=lambda stdout, stderr: (
            f"torchrun {script.name} was still running after {timeout:g} s and was stopped; what it printed "
            f"(a rank that torchrun stopped prints its threads' stacks):\n{_tail(stdout, stderr)}"
        ),
    )
    assert done.returncode == 0, _tail(done.stdout, done.stderr)
    return done


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop a torchrun that ran too long and return what it printed (its workers may keep the pipes open)."""
    proc.terminate()
    try:
        return proc.communicate(timeout=TERMINATE_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
    try:
        return proc.communicate(timeout=5)
    except subprocess.TimeoutExpired as late:  # a worker that outlived torchrun holds the pipes: take what came
        return _text(late.stdout), _text(late.stderr)


def _text(part: str | bytes | None) -> str:
    return part.decode(errors="replace") if isinstance(part, bytes) else part or ""


def _tail(stdout: str, stderr: str) -> str:
    return f"--- stdout (tail)\n{stdout[-6000:]}\n--- stderr (tail)\n{stderr[-8000:]}"


def test_two_process_gloo_job_through_torchrun(tmp_path: Path) -> None:
    torchrun(
        WORKER,
        str(tmp_path),
        ACCELHAL_ACCELERATOR="cpu",
        OMP_NUM_THREADS="1",
        ACCELHAL_TEST_WATCHDOG_SECONDS=str(WATCHDOG_SECONDS),
    )

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
    proc = torchrun(BENCHMARK, "--max-mib", "64", "--repeats", "5", "--out", str(out), timeout=300)
    result = json.loads(out.read_text())
    assert (result["accelerator"], result["backend"]) == ("cuda", "nccl")
    _check_benchmark_result(result, [1, 2, 4, 8, 16, 32, 64])
    print(proc.stdout)
