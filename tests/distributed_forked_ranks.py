"""Two ranks of a real gloo job in one test child: the process forks, each side joins through accelhal.distributed.

``python tests/distributed_forked_ranks.py SCENARIO`` with ``MASTER_PORT`` and ``SECOND_PORT``
(free ports) set; prints one JSON list, rank 0's record then rank 1's. Forking after ``import
torch`` (and after loading the test device) costs a fraction of a second where a launcher
would import torch three times; tests run it through :func:`tests.warm.run_script`.

Scenarios:

- ``mps``: the simulated mps (``torch.mps.device_count()`` counts one device; this torch has
  no Metal, so no tensor can be made on it), one rank per node as on two Macs: the default
  set-up, its idempotence, the refused ``"cpu:gloo,mps:gloo"``, the collective self-checks on
  cpu tensors, ``monitored_barrier`` (torch's refusal, the group's own method, a gloo group),
  then a second group with ``"cpu:gloo"``.
- ``by_name``: the simulated mps in a fresh process, ``backend="hostgloo"`` (the name the set-up
  reports) and a ``"type:backend"`` string that names neither mps nor cpu.
- ``testdev``: the PrivateUse1 test device (real tensors in host memory; torch >= 2.9), two
  devices on one node, ``backend="gloo"``: the same host staging as on mps, on device
  tensors (collectives, DDP, async work, send and recv, a parameter broadcast in place).

Each rank arms a watchdog (every thread's stack on stderr, exit 1) so that a hang fails fast.
Tests call :func:`run`.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

WATCHDOG_SECONDS = 90

Record = dict[str, Any]


def _checks(device: torch.device, *, ddp: bool) -> dict[str, bool]:
    """accelhal's self-checks (DDP's first use imports torch._dynamo: seconds of CPU, so only where asked)."""
    from accelhal.distributed import checks

    results = [checks.check_all_reduce(device, n) for n in (1, 1000)]
    results += [checks.check_broadcast(device), checks.check_all_gather(device)]
    results += [checks.check_ddp(device)] if ddp else []
    return {result.name: result.passed for result in results}


def _monitored_barrier_refused() -> str:
    """What torch's ``monitored_barrier`` on the default group raised ('' where it passed)."""
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=60))
    except ValueError as err:
        return str(err)
    return ""


def _monitored_barrier() -> list[str]:
    """torch's ``monitored_barrier`` on the default group (its refusal), then the two ways that work."""
    refused = _monitored_barrier_refused()
    world = dist.group.WORLD
    assert world is not None
    world.monitored_barrier(timedelta(seconds=60), wait_all_ranks=True)  # the group's own, delegated to gloo
    gloo = dist.new_group(backend="gloo")
    dist.monitored_barrier(group=gloo, timeout=timedelta(seconds=60), wait_all_ranks=True)
    return [refused, str(dist.get_backend(gloo))]


def mps(rank: int) -> Record:
    import accelhal
    import accelhal.distributed as ahd

    record: Record = {}
    try:
        ahd.init_process_group("cpu:gloo,mps:gloo")
    except accelhal.DistributedSetupError as err:
        record["refused"] = [str(err), err.variable]
    setup = ahd.init_process_group()
    record["setup"] = [setup.backend, str(dist.get_backend()), str(setup.device), setup.accelerator]
    record["idempotent"] = ahd.init_process_group() is setup and ahd.init_process_group("gloo") is setup
    record["checks"] = _checks(torch.device("cpu"), ddp=False)
    record["monitored_barrier"] = _monitored_barrier()
    dist.barrier()
    ahd.destroy_process_group()
    os.environ["MASTER_PORT"] = os.environ["SECOND_PORT"]
    host_only = ahd.init_process_group("cpu:gloo")
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)
    record["host_only"] = [host_only.backend, str(dist.get_backend()), total.item(), _monitored_barrier_refused()]
    dist.barrier()
    ahd.destroy_process_group()
    return record


def testdev(rank: int) -> Record:
    import accelhal.distributed as ahd

    setup = ahd.init_process_group("gloo")
    device = setup.device
    record: Record = {"setup": [setup.backend, str(dist.get_backend()), str(device), setup.accelerator]}
    record["checks"] = _checks(device, ddp=True)
    tensor = torch.full((3,), rank + 1.0, device=device)
    work = dist.all_reduce(tensor, async_op=True)
    done = work.is_completed()
    work.wait()
    value = work.get_future().value()
    record["async"] = [done, tensor.cpu().tolist(), str(tensor.device), value[0] is tensor]
    gathered = torch.empty(4, device=device)
    dist.all_gather_into_tensor(gathered, torch.full((2,), float(rank), device=device))
    scattered = torch.empty(2, device=device)
    dist.reduce_scatter_tensor(scattered, torch.arange(4.0, device=device))
    record["into_tensor"] = [gathered.cpu().tolist(), scattered.cpu().tolist()]
    message = torch.tensor([7.0 if rank == 0 else 0.0], device=device)
    if rank == 0:
        dist.send(message, 1)
    else:
        dist.recv(message, 0)
    record["sent"] = message.cpu().tolist()
    parameter = torch.nn.Parameter(torch.full((2,), float(rank), device=device))
    dist.broadcast(parameter, src=1)  # in place, as gloo does a cpu parameter
    parts = [torch.empty(1, device=device) for _ in range(2)]
    future = dist.all_gather(parts, torch.full((1,), float(rank), device=device), async_op=True).get_future()
    held = future.wait()  # gloo's own future holds the output tensors, one list
    same = [t is p for t, p in zip(held, parts, strict=True)]
    record["parameter_and_gather"] = [parameter.tolist(), parameter.requires_grad, same]
    dist.barrier()
    ahd.destroy_process_group()
    return record


def by_name(rank: int) -> Record:
    """mps, in a fresh process: ``hostgloo`` asked for by the name the set-up reports, then a string for no device."""
    import accelhal
    import accelhal.distributed as ahd

    setup = ahd.init_process_group("hostgloo")
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)
    record: Record = {"setup": [setup.backend, str(dist.get_backend()), total.item()]}
    dist.barrier()
    ahd.destroy_process_group()
    try:
        ahd.init_process_group("cuda:gloo")
    except accelhal.DistributedSetupError as err:
        record["refused"] = [str(err), err.variable, dist.is_initialized()]
    return record


def _simulate(scenario: str) -> None:
    """Before the fork: make the scenario's device this process's."""
    if scenario in ("mps", "by_name"):
        torch.mps.device_count = lambda: 1
    else:
        from tests.privateuse1 import device

        device.load("testdev", devices=2)


def _join_as(scenario: str, rank: int) -> None:
    """After the fork: the launcher's variables of ``rank`` (on mps one rank per node, as on two Macs)."""
    local, per_node = (rank, 2) if scenario == "testdev" else (0, 1)
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(local), LOCAL_WORLD_SIZE=str(per_node))
    accelerator = "testdev" if scenario == "testdev" else "mps"
    os.environ.update(MASTER_ADDR="127.0.0.1", ACCELHAL_ACCELERATOR=accelerator, ACCELHAL_DIST_TIMEOUT="60")


def run(scenario: str, stderr: list[str] | None = None) -> list[Record]:
    """Run this script's ``scenario`` in a warm child (from a test); each rank's record.

    The child's standard error is appended to ``stderr`` where it is given.
    """
    from tests import warm
    from tests.sharing import free_port

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARIABLES)}
    env.update(PYTHONPATH=str(root), MASTER_PORT=str(free_port()), SECOND_PORT=str(free_port()))
    out = warm.run_script(Path(__file__), [scenario], env, sys.executable, timeout=WATCHDOG_SECONDS + 30, cwd=root)
    assert out.returncode == 0, out.stderr[-6000:]
    if stderr is not None:
        stderr.append(out.stderr)
    records: list[Record] = json.loads(out.stdout.strip().splitlines()[-1])
    for rank, record in enumerate(records):
        assert "error" not in record, f"rank {rank}:\n{record['error']}\n{out.stderr[-4000:]}"
    return records


LAUNCHER_VARIABLES = ("MASTER_", "RANK", "WORLD_SIZE", "LOCAL_", "GROUP_", "ROLE_", "TORCHELASTIC_", "ACCELHAL_")


def main(scenario: str) -> None:
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
    _simulate(scenario)
    read_end, write_end = os.pipe()
    child = os.fork()
    rank = 1 if child == 0 else 0
    _join_as(scenario, rank)
    try:
        record = {"mps": mps, "testdev": testdev, "by_name": by_name}[scenario](rank)
    except Exception:  # the test shows it; the other rank fails by the group's timeout or the watchdog
        record = {"error": traceback.format_exc()}
    if child == 0:
        os.close(read_end)
        os.write(write_end, json.dumps(record).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as other:
        records = [record, json.loads(other.read() or '{"error": "rank 1 wrote nothing"}')]
    os.waitpid(child, 0)
    print(json.dumps(records))
    sys.stdout.flush()
    # Skip interpreter teardown, as tests/distributed_gloo_worker.py does: gloo's threads have
    # aborted a rank at shutdown on a loaded machine after the group was destroyed.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
