"""Worker for test_distributed_torchrun.py: run by torchrun, one process per rank.

Sets up the group through accelhal.distributed, checks idempotence and conflicts, runs the
exact self-checks (all-reduce, broadcast, all-gather, DDP) and writes what it saw to
``<out>/rank<N>.json``. Exits non-zero when a check fails.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch.distributed as dist

import accelhal
import accelhal.distributed as ahd


def main(out: Path) -> int:
    setup = ahd.init_process_group()
    again = ahd.init_process_group()
    conflicts = {}
    for kwargs in ({"backend": "nccl"}, {"world_size": setup.world_size + 1}):
        try:
            ahd.init_process_group(**kwargs)
        except accelhal.DistributedSetupError as err:
            conflicts[next(iter(kwargs))] = str(err)
    results = ahd.selfcheck(setup.device)
    record = {
        "rank": setup.rank,
        "world_size": setup.world_size,
        "local_rank": setup.local_rank,
        "backend": setup.backend,
        "torch_backend": str(dist.get_backend()),
        "device": str(setup.device),
        "accelerator": setup.accelerator,
        "source": setup.launch.source,
        "idempotent": again is setup,
        "conflicts": conflicts,
        "checks": {r.name: [r.passed, r.detail] for r in results},
    }
    dist.barrier()  # both ranks leave together
    ahd.destroy_process_group()
    record["destroyed"] = not dist.is_initialized()
    (out / f"rank{setup.rank}.json").write_text(json.dumps(record, indent=1))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    code = main(Path(sys.argv[1]))
    # Skip interpreter teardown: on a loaded two-core machine gloo's threads have aborted a
    # rank at shutdown ("terminate called without an active exception") after the group was
    # destroyed and the record written. The record is what the test checks.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
