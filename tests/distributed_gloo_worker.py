"""Worker for test_distributed_torchrun.py: run by torchrun, one process per rank.

Sets up the group through accelhal.distributed, checks idempotence and conflicts, runs the
exact self-checks (all-reduce, broadcast, all-gather, DDP) and writes what it saw to
``<out>/rank<N>.json``. Exits non-zero when a check fails, and with 1 and every thread's stack
on stderr when it is still running after ``ACCELHAL_TEST_WATCHDOG_SECONDS`` (90 by default).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from pathlib import Path

# A rank must never hang silently: before torch is imported, arm a watchdog that prints every
# thread's stack to stderr and exits 1 (torchrun then stops the other rank and fails), and print
# the stacks when torchrun (or the test's time limit, through torchrun) terminates this rank.
WATCHDOG_SECONDS = float(os.environ.get("ACCELHAL_TEST_WATCHDOG_SECONDS", "90"))
faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
faulthandler.register(signal.SIGTERM, chain=True)

import torch.distributed as dist  # noqa: E402 - after the watchdog, which covers importing torch

import accelhal  # noqa: E402
import accelhal.distributed as ahd  # noqa: E402


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
    # On torch 2.4.1 this teardown deadlocked now and then (a gloo worker thread waited for the
    # GIL that torch's ProcessGroup destructor held); accelhal's destroy_process_group avoids it.
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
