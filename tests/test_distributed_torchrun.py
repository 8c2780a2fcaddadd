"""A real 2-process gloo job on cpu through torchrun, set up by accelhal.distributed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("distributed_gloo_worker.py")


def test_two_process_gloo_job_through_torchrun(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MASTER_", "RANK", "WORLD_SIZE", "LOCAL_"))}
    env.update(ACCELHAL_ACCELERATOR="cpu", OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    proc = subprocess.run([*command, str(WORKER), str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]

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
