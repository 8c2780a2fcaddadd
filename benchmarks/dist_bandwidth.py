"""All-reduce bus bandwidth through accelhal.distributed next to torch.distributed itself, plus correctness and DDP.

Run on a node with two GPUs (writes the JSON on rank 0, prints a table)::

    torchrun --standalone --nproc_per_node=2 benchmarks/dist_bandwidth.py --out $OUT/dist.json

What one run does, every rank taking part:

1. ``accelhal.distributed.init_process_group()`` -- the backend (nccl on cuda) comes from the
   active accelerator, the device from ``LOCAL_RANK``;
2. the exact self-checks (``accelhal.distributed.selfcheck``): all-reduce over several sizes up
   to 64 Mi elements, broadcast, all-gather, two DDP steps against a one-process reference;
3. the sweep, 1 MiB .. 1 GiB (powers of two): at each size, all-reduce on the default group
   set up by accelhal (tensor on ``setup.device``, timed with ``accelerator.Event``) and on a
   second communicator written directly against torch (``torch.distributed.new_group``, tensor
   from ``torch.device("cuda", LOCAL_RANK)``, timed with ``torch.cuda.Event``), interleaved
   repeat by repeat (alternating which goes first); after a warm-up, the median of the
   repeats; the slowest rank's median counts.
   ``busbw = algbw * 2(n-1)/n`` with ``algbw = bytes / time`` (nccl-tests' definition);
4. a DDP training step on a 4-layer MLP: time per step, and parameters identical on all ranks.

``--smoke`` runs the same code on whatever backend is active (gloo on cpu, host timers) with
small sizes, so CI can keep the script working without a GPU. Never touches NCCL_* variables.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

import accelhal
import accelhal.distributed as ahd

MiB = 1 << 20


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file written by rank 0")
    parser.add_argument("--min-mib", type=int, default=1)
    parser.add_argument("--max-mib", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=25, help="timed samples per size and path (median taken)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed all-reduces per size and path")
    parser.add_argument("--bytes-per-sample", type=int, default=512 * MiB, help="sets the all-reduces per sample")
    parser.add_argument("--smoke", action="store_true", help="allow a non-nccl backend and host timers (CI on cpu)")
    return parser.parse_args()


class Route:
    """One way of issuing all-reduces: a group, a device, an event class (or host timing)."""

    def __init__(
        self, name: str, group: Any, device: torch.device, event: type[Any] | None, sync: Callable[[], None]
    ) -> None:
        self.name, self.group, self.device, self.event, self.sync = name, group, device, event, sync

    def seconds_per_op(self, tensor: torch.Tensor, ops: int) -> float:
        """Time ``ops`` back-to-back all-reduces of ``tensor``; seconds per all-reduce."""
        if self.event is None:
            self.sync()
            start = time.perf_counter()
            for _ in range(ops):
                dist.all_reduce(tensor, group=self.group)
            self.sync()
            return (time.perf_counter() - start) / ops
        begin, end = self.event(enable_timing=True), self.event(enable_timing=True)
        begin.record()
        for _ in range(ops):
            dist.all_reduce(tensor, group=self.group)
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end)) / 1e3 / ops


def make_routes(setup: ahd.ProcessGroupSetup, smoke: bool) -> list[Route]:
    accelerator = accelhal.get_accelerator()
    event = None if accelerator.use_host_timers() else accelerator.Event
    through_accelhal = Route("accelhal", None, setup.device, event, accelerator.synchronize)
    direct_group = dist.new_group(ranks=list(range(setup.world_size)), backend=setup.backend)
    if smoke:
        direct = Route("torch", direct_group, setup.device, None, accelerator.synchronize)
    else:
        local_rank = int(os.environ["LOCAL_RANK"])
        direct = Route(
            "torch", direct_group, torch.device("cuda", local_rank), torch.cuda.Event, torch.cuda.synchronize
        )
    return [through_accelhal, direct]


def slowest(seconds: float, device: torch.device) -> float:
    """The largest of every rank's ``seconds`` (a rank's figure is only as good as the slowest one)."""
    value = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return float(value.item())


def sweep(args: argparse.Namespace, routes: list[Route], world: int) -> list[dict[str, Any]]:
    rows = []
    sizes = [MiB << k for k in range(int(math.log2(args.min_mib)), int(math.log2(args.max_mib)) + 1)]
    factor = 2 * (world - 1) / world
    for size in sizes:
        ops = max(5, min(200, args.bytes_per_sample // size))
        tensors = [torch.zeros(size // 4, dtype=torch.float32, device=p.device) for p in routes]
        for route, tensor in zip(routes, tensors, strict=True):
            route.seconds_per_op(tensor, args.warmup)
        samples: dict[str, list[float]] = {p.name: [] for p in routes}
        for repeat in range(args.repeats):
            order = range(len(routes)) if repeat % 2 == 0 else reversed(range(len(routes)))
            for i in order:
                samples[routes[i].name].append(routes[i].seconds_per_op(tensors[i], ops))
        row: dict[str, Any] = {"bytes": size, "ops_per_sample": ops, "repeats": args.repeats}
        for route in routes:
            seconds = slowest(statistics.median(samples[route.name]), routes[0].device)
            row[f"{route.name}_us"] = seconds * 1e6
            row[f"{route.name}_busbw_gbps"] = size / seconds * factor / 1e9
        row["ratio"] = row["accelhal_busbw_gbps"] / row["torch_busbw_gbps"]
        rows.append(row)
        del tensors
    return rows


def ddp_step(device: torch.device, smoke: bool) -> dict[str, Any]:
    """Time DDP training steps on a 4-layer MLP; check every rank ends with the same parameters."""
    width, batch, steps = (256, 32, 3) if smoke else (4096, 256, 20)
    torch.manual_seed(1234)
    blocks = [m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.GELU())]
    model = torch.nn.Sequential(*blocks).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=None if device.type == "cpu" else [device])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    generator = torch.Generator(device="cpu").manual_seed(dist.get_rank())
    x = torch.randn(batch, width, generator=generator).to(device)
    losses, times = [], []
    accelerator = accelhal.get_accelerator()
    for _ in range(steps):
        accelerator.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = ddp(x).pow(2).mean()
        torch.autograd.backward(loss)
        optimizer.step()
        accelerator.synchronize()
        times.append(time.perf_counter() - start)
        losses.append(float(loss.item()))
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    identical = torch.tensor([int(torch.equal(flat, reference))], device=device)
    dist.all_reduce(identical, op=dist.ReduceOp.MIN)
    return {
        "width": width,
        "batch_per_rank": batch,
        "steps": steps,
        "parameters": flat.numel(),
        "median_step_ms": statistics.median(times[1:] or times) * 1e3,
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "parameters_identical_on_all_ranks": bool(identical.item()),
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'size':>9} {'ops':>4} {'accelhal busbw GB/s':>20} {'torch busbw GB/s':>17} {'ratio':>7}")
    for row in rows:
        size = f"{row['bytes'] // MiB} MiB"
        print(
            f"{size:>9} {row['ops_per_sample']:>4} {row['accelhal_busbw_gbps']:>20.2f} "
            f"{row['torch_busbw_gbps']:>17.2f} {row['ratio']:>7.4f}"
        )


def main() -> int:
    args = parse_args()
    setup = ahd.init_process_group()
    if setup.backend != "nccl" and not args.smoke:
        raise SystemExit(f"expected nccl from the active accelerator, got {setup.backend!r} ({setup.accelerator})")
    checks = ahd.selfcheck(setup.device, sizes=(1, 7, 1023, 1 << 20, (16 << 20) + 3) if not args.smoke else (1, 7))
    routes = make_routes(setup, args.smoke)
    rows = sweep(args, routes, setup.world_size)
    ddp = ddp_step(setup.device, args.smoke)
    deviation = max(abs(row["ratio"] - 1) for row in rows)
    result = {
        "accelerator": setup.accelerator,
        "backend": setup.backend,
        "world_size": setup.world_size,
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if setup.backend == "nccl" else None,
        "device": accelhal.get_accelerator().device_description(setup.device.index or 0),
        "environment": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "CUDA_VISIBLE"))},
        "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in checks],
        "checks_passed": all(c.passed for c in checks),
        "sweep": rows,
        "max_ratio_deviation": deviation,
        "within_2_percent": deviation <= 0.02,
        "ddp": ddp,
    }
    if setup.rank == 0:
        print(f"{setup.world_size} ranks, {setup.backend} ({result['nccl']}), torch {torch.__version__}")
        for check in checks:
            print(f"  check {check.name:<22} {'ok' if check.passed else 'FAILED'}  {check.detail}")
        print_table(rows)
        print(f"max |ratio - 1| = {deviation:.4f} ({'within' if deviation <= 0.02 else 'NOT within'} 2%)")
        print(f"DDP: {ddp}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    dist.barrier()  # ranks leave together: no rank tears its group down under a peer still using it
    ahd.destroy_process_group()
    return 0 if result["checks_passed"] and ddp["parameters_identical_on_all_ranks"] else 1


if __name__ == "__main__":
    sys.exit(main())
