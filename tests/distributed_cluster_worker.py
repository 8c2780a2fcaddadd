"""Worker for the cluster tests: started by torchrun, mpirun/mpiexec or a simulated srun, one per rank.

``python distributed_cluster_worker.py MODE OUT [ARGS]`` joins the group through
``accelhal.distributed.init_process_group()`` and writes what it saw to ``OUT/<name>.json``:

* ``report``: where the rank stands (launcher, ranks, device, rendezvous), the results of an
  all-reduce and an all-gather of ``(rank, node)`` with the values expected from rank arithmetic,
  and what ``lost_rank_guard()`` makes of an error while every rank is alive.
* ``elastic STEPS KILL_AT``: ``report``, then a training loop of ``STEPS`` steps whose state
  (an integer recurrence over an all-reduce) is checkpointed by rank 0 after every step; on the
  first attempt (``TORCHELASTIC_RESTART_COUNT=0``) the last rank kills itself (SIGKILL) at step
  ``KILL_AT``. Each attempt resumes from the checkpoint and records the steps it ran.
* ``lost VICTIM SIGNAL`` (plain processes given ``RANK``/``WORLD_SIZE``, which start together
  so that a short ``ACCELHAL_DIST_TIMEOUT`` times no start-up): after one all-reduce, rank
  ``VICTIM`` sends itself ``SIGNAL`` (KILL: it dies; STOP: it freezes, as a node that vanished);
  the others go on all-reducing inside ``lost_rank_guard()`` and record the error they get and when.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

import accelhal
import accelhal.distributed as ahd


def node_of(setup: ahd.ProcessGroupSetup) -> int:
    """This rank's node: the launcher's node variable, else the rank's block (all nodes run as many)."""
    for variable in ("GROUP_RANK", "SLURM_NODEID"):
        if variable in os.environ:
            return int(os.environ[variable])
    return setup.rank // (setup.launch.local_world_size or setup.world_size)


def report(setup: ahd.ProcessGroupSetup) -> dict[str, object]:
    """Where this rank stands, and the results of two collectives next to what rank arithmetic expects."""
    world = setup.world_size
    total = torch.tensor([setup.rank + 1], dtype=torch.int64, device=setup.device)
    dist.all_reduce(total)
    pairs = [torch.empty(2, dtype=torch.int64, device=setup.device) for _ in range(world)]
    dist.all_gather(pairs, torch.tensor([setup.rank, node_of(setup)], device=setup.device))
    started = time.monotonic()
    try:
        with ahd.lost_rank_guard():  # every rank is alive: the error passes through, once all are seen
            raise RuntimeError("a failure no lost rank explains")
    except RuntimeError as err:
        guarded = [type(err).__name__, str(err), time.monotonic() - started]
    return {
        "source": setup.launch.source,
        "rank": setup.rank,
        "world_size": world,
        "local_rank": setup.local_rank,
        "local_world_size": setup.launch.local_world_size,
        "device": str(setup.device),
        "expected_device": str(accelhal.get_accelerator().device(setup.local_rank)),
        "backend": setup.backend,
        "node": node_of(setup),
        "master": [os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")],
        "master_from": [setup.launch.variable("master_addr"), setup.launch.variable("master_port")],
        "torch_variables": [os.environ.get(v) for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK")],
        "all_reduce": [int(total.item()), world * (world + 1) // 2],
        "all_gather": [p.tolist() for p in pairs],
        "guarded": guarded,
        "restart_count": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "-1")),
        "pid": os.getpid(),
    }


def step(number: int, rank: int, device: torch.device) -> int:
    """One training step: the all-reduce (sum) of ``rank * number + 1``."""
    contribution = torch.tensor([rank * number + 1], dtype=torch.int64, device=device)
    dist.all_reduce(contribution)
    return int(contribution.item())


def fold(state: int, contribution: int) -> int:
    """The state after a step: a repeated, skipped or reordered step gives another result."""
    return (state * 31 + contribution) % 1_000_003


def elastic(setup: ahd.ProcessGroupSetup, out: Path, steps: int, kill_at: int) -> dict[str, object]:
    """Train from the checkpoint in ``out`` to ``steps``; the last rank dies at ``kill_at`` on attempt 0."""
    checkpoint = out / "checkpoint.json"
    saved = json.loads(checkpoint.read_text()) if checkpoint.exists() else {"next_step": 0, "state": 0}
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    state, ran = saved["state"], []
    (out / f"report-{os.getpid()}.json").write_text(json.dumps({**report(setup), "resumed": saved}))
    for number in range(saved["next_step"], steps):
        if attempt == 0 and number == kill_at and setup.rank == setup.world_size - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        state = fold(state, step(number, setup.rank, setup.device))
        ran.append(number)
        if setup.rank == 0:  # every rank has finished step `number`: its all-reduce needed them all
            temporary = out / "checkpoint.tmp"
            temporary.write_text(json.dumps({"next_step": number + 1, "state": state}))
            temporary.replace(checkpoint)
    return {"attempt": attempt, "resumed": saved, "ran": ran, "state": state, "pid": os.getpid()}


def lost(setup: ahd.ProcessGroupSetup, out: Path, victim: int, signal_name: str) -> dict[str, object]:
    """Lose rank ``victim``; the others record the error their next collectives raise."""
    tensor = torch.ones(4, device=setup.device)
    dist.all_reduce(tensor)
    if setup.rank == victim:
        (out / "death.json").write_text(json.dumps({"time": time.time(), "pid": os.getpid()}))
        os.kill(os.getpid(), getattr(signal, f"SIG{signal_name}"))
        time.sleep(600)  # a stopped process never gets here until it is killed
    time.sleep(0.5)  # let the victim go first
    try:
        with ahd.lost_rank_guard():
            for _ in range(1000):
                dist.all_reduce(tensor)
        return {"error": None}
    except Exception as err:
        seen = time.time()
        return {
            "error": type(err).__name__,
            "message": str(err),
            "ranks": list(getattr(err, "ranks", [])),
            "cause": str(err.__cause__).splitlines()[0] if err.__cause__ else None,
            "time": seen,
            "group_destroyed": not dist.is_initialized(),
        }


def start_together(out: Path) -> None:
    """Wait until every rank has started (imports done), so that a short timeout times no start-up."""
    (out / f"ready-{os.environ['RANK']}").touch()
    deadline = time.monotonic() + 120
    while len(list(out.glob("ready-*"))) < int(os.environ["WORLD_SIZE"]) and time.monotonic() < deadline:
        time.sleep(0.05)


def main(mode: str, out: Path, *args: str) -> int:
    if mode == "lost":
        start_together(out)
    setup = ahd.init_process_group()
    if mode == "report":
        record = report(setup)
    elif mode == "elastic":
        record = elastic(setup, out, int(args[0]), int(args[1]))
    else:
        record = lost(setup, out, int(args[0]), args[1])
    record.update(rank=setup.rank, pid=os.getpid())
    if mode != "lost":
        dist.barrier()  # all ranks leave together
        ahd.destroy_process_group()
    (out / f"{mode}-rank{setup.rank}.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1], Path(sys.argv[2]), *sys.argv[3:])
    # Skip interpreter teardown (as distributed_gloo_worker.py does): gloo's threads have aborted
    # a rank at shutdown on a loaded machine, after its record was written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
