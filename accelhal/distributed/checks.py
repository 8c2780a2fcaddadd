"""A quick proof that a process group really works: collectives and a DDP step, checked exactly.

Call :func:`selfcheck` on every rank after :func:`~accelhal.distributed.init_process_group`.
Each check computes its expected result from rank arithmetic alone, so a wrong answer from the
communication library cannot agree with it by accident. The numbers are small integers and
powers of two, so every float result is exact and compared with ``torch.equal`` (no tolerance),
whatever order the library sums in.

>>> setup = init_process_group()
>>> results = selfcheck(setup.device)
>>> all(r.passed for r in results), [r.name for r in results][:2]
(True, ['all_reduce[n=1]', 'all_reduce[n=5]'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F  # noqa: N812 - torch's convention


@dataclass(frozen=True)
class CheckResult:
    """One check on this rank: its name, whether it passed, and what was compared."""

    name: str
    passed: bool
    detail: str = ""


def selfcheck(device: torch.device, sizes: Sequence[int] = (1, 5, 1000, 65537)) -> list[CheckResult]:
    """Run all-reduce (over ``sizes`` elements), broadcast, all-gather and two DDP steps on ``device``.

    Returns one :class:`CheckResult` per check; every rank must call it (it is collective).
    """
    results = [check_all_reduce(device, n) for n in sizes]
    results += [check_broadcast(device), check_all_gather(device), check_ddp(device)]
    return results


def check_all_reduce(device: torch.device, numel: int, dtype: torch.dtype = torch.float32) -> CheckResult:
    """Sum ``(rank + 1) * pattern`` over the ranks; expect ``W(W+1)/2 * pattern``."""
    rank, world = dist.get_rank(), dist.get_world_size()
    pattern = torch.arange(numel, device=device) % 5 + 1
    tensor = ((rank + 1) * pattern).to(dtype)
    dist.all_reduce(tensor)
    expected = (world * (world + 1) // 2 * pattern).to(dtype)
    return _compare(f"all_reduce[n={numel}]", tensor, expected)


def check_broadcast(device: torch.device) -> CheckResult:
    """Broadcast ``100 * src + arange`` from the last rank; every rank must end with it."""
    rank, world = dist.get_rank(), dist.get_world_size()
    src = world - 1
    tensor = 100 * rank + torch.arange(8, device=device, dtype=torch.int64)
    dist.broadcast(tensor, src=src)
    return _compare(f"broadcast[src={src}]", tensor, 100 * src + torch.arange(8, device=device, dtype=torch.int64))


def check_all_gather(device: torch.device) -> CheckResult:
    """Gather ``[rank, rank**2]`` from every rank; expect them in rank order."""
    world = dist.get_world_size()
    rank = dist.get_rank()
    parts = [torch.empty(2, device=device, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(parts, torch.tensor([rank, rank * rank], device=device))
    expected = torch.tensor([[r, r * r] for r in range(world)], device=device)
    return _compare("all_gather", torch.stack(parts), expected)


def check_ddp(device: torch.device, steps: int = 2) -> CheckResult:
    """Train a linear layer with DDP for ``steps`` SGD steps; compare with one process on the whole batch.

    Every rank's parameters must be identical to every other's and to the single-process
    reference (gradient averaging over equal shards equals the gradient of the full batch).
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    model = _reference_model(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=None if device.type == "cpu" else [device])
    ddp_opt = torch.optim.SGD(ddp.parameters(), lr=2.0**-4)
    reference = _reference_model(device)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=2.0**-4)
    shards = [_shard(r, device) for r in range(world)]
    full_x = torch.cat([x for x, _ in shards])
    full_y = torch.cat([y for _, y in shards])
    for _ in range(steps):
        x, y = shards[rank]
        ddp_opt.zero_grad()
        torch.autograd.backward(F.mse_loss(ddp(x), y))
        ddp_opt.step()
        ref_opt.zero_grad()
        torch.autograd.backward(F.mse_loss(reference(full_x), full_y))
        ref_opt.step()
    mine = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine)
    expected = torch.cat([p.detach().flatten() for p in reference.parameters()])
    same = all(torch.equal(g, gathered[0]) for g in gathered)
    if not same:
        return CheckResult("ddp", False, "parameters differ between ranks after the DDP step")
    return _compare("ddp", mine, expected)


def _reference_model(device: torch.device) -> torch.nn.Linear:
    """A 4->4 float64 linear layer with small integer weights (identical on every rank)."""
    model = torch.nn.Linear(4, 4, dtype=torch.float64, device=device)
    with torch.no_grad():
        model.weight.copy_(torch.arange(16, dtype=torch.float64).reshape(4, 4) % 5 - 2)
        model.bias.copy_(torch.tensor([1.0, -1.0, 0.5, 0.0]))
    return model


def _shard(rank: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s 4 samples: small integers that differ per rank."""
    x = (torch.arange(16, dtype=torch.float64).reshape(4, 4) + 3 * rank) % 7 - 3
    y = (torch.arange(16, dtype=torch.float64).reshape(4, 4) + rank) % 5 - 2
    return x.to(device), y.to(device)


def _compare(name: str, actual: torch.Tensor, expected: torch.Tensor) -> CheckResult:
    if torch.equal(actual, expected):
        return CheckResult(name, True, f"{actual.numel()} elements equal")
    wrong = int((actual != expected).sum())
    return CheckResult(
        name, False, f"{wrong} of {actual.numel()} elements differ; first got {actual.flatten()[:4].tolist()}"
    )
