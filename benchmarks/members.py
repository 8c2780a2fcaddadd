"""The 20 most-used contract members against the equivalent direct torch expression.

The members are the 20 that DeepSpeed 0.19.8 calls most through
``get_accelerator()`` (call-site counts from the reference study, section 1.2). Each is
timed as ``acc.<member>(...)`` against what code would write without accelhal:

* ``torch``: the torch call that gives the same answer (``torch.cuda.current_stream()``);
* ``expression``: where torch has no call for it (``t.device.type == "cpu"``), that
  expression inside a plain function, because every API member is a call: the ratio
  then shows accelhal's dispatch and logic, not the cost of making a call at all;
* ``floor``: where torch has nothing to call (execution-model flags, no-ops and the
  tensor itself on cpu), a method of a plain object with the member's signature and
  the same behaviour written plainly (the branch on ``device_index`` or ``make_copy``
  that the answer needs, no validation): the least any member of an accelerator
  object can cost;
* ``attribute``: class-valued members (``Stream``, ``Event``) read as attributes.

On cuda the statements do the real work (events and streams are created, a captured
graph is replayed), so the ratio is accelhal's overhead on top of the same torch work.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.method import Method, compare_statements
from benchmarks.results import SuiteResult, Target, fmt

LIMIT = 1.10


@dataclass(frozen=True)
class Pair:
    """A member, its call-site count in DeepSpeed, the accelhal statement and the direct ones."""

    member: str
    uses: int
    accelhal: str
    direct: dict[str, str]
    """Direct statement per device type (``cpu``, ``cuda``)."""
    kind: dict[str, str]
    """Baseline kind per device type: torch, expression, constant, attribute."""
    accelhal_by_device: dict[str, str] | None = None
    """A different accelhal statement on some device type (e.g. ``acc.Event(...)`` on cuda)."""

    def statement(self, device: str) -> str:
        return (self.accelhal_by_device or {}).get(device, self.accelhal)


def _both(stmt: str, kind: str) -> tuple[dict[str, str], dict[str, str]]:
    return {"cpu": stmt, "cuda": stmt}, {"cpu": kind, "cuda": kind}


PAIRS: tuple[Pair, ...] = (
    Pair(
        "current_device_name",
        147,
        "acc.current_device_name()",
        {"cpu": "torch.cpu.current_device()", "cuda": "f'cuda:{torch.cuda.current_device()}'"},
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair("device_name", 65, "acc.device_name()", *_both("floor.device_name()", "floor")),
    Pair(
        "current_device",
        58,
        "acc.current_device()",
        {"cpu": "local_rank()", "cuda": "torch.cuda.current_device()"},
        {"cpu": "expression", "cuda": "torch"},
    ),
    Pair(
        "current_stream",
        49,
        "acc.current_stream()",
        {"cpu": "torch.cpu.current_stream()", "cuda": "torch.cuda.current_stream()"},
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair(
        "synchronize",
        40,
        "acc.synchronize()",
        {"cpu": "torch.cpu.synchronize()", "cuda": "torch.cuda.synchronize()"},
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair(
        "stream",
        36,
        "with acc.stream(side): pass",
        {"cpu": "with torch.cpu.stream(torch_side): pass", "cuda": "with torch.cuda.stream(torch_side): pass"},
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair(
        "resolves_data_dependency",
        33,
        "acc.resolves_data_dependency()",
        *_both("floor.resolves_data_dependency()", "floor"),
    ),
    Pair("on_accelerator", 31, "acc.on_accelerator(x)", *_both("on_device(x)", "expression")),
    Pair(
        "pin_memory",
        29,
        "acc.pin_memory(host)",
        {"cpu": "floor.pin_memory(host)", "cuda": "host.pin_memory()"},
        {"cpu": "floor", "cuda": "torch"},
    ),
    Pair(
        "empty_cache",
        21,
        "acc.empty_cache()",
        {"cpu": "floor.empty_cache()", "cuda": "torch.cuda.empty_cache()"},
        {"cpu": "floor", "cuda": "torch"},
    ),
    Pair(
        "Event",
        19,
        "acc.Event",
        {"cpu": "torch.cpu.Event", "cuda": "torch.cuda.Event(enable_timing=True)"},
        {"cpu": "attribute", "cuda": "torch"},
        {"cuda": "acc.Event(enable_timing=True)"},
    ),
    Pair(
        "memory_allocated",
        15,
        "acc.memory_allocated()",
        {"cpu": "rss()", "cuda": "torch.cuda.memory_allocated()"},
        {"cpu": "expression", "cuda": "torch"},
    ),
    Pair(
        "Stream",
        14,
        "acc.Stream",
        {"cpu": "torch.cpu.Stream", "cuda": "torch.cuda.Stream()"},
        {"cpu": "attribute", "cuda": "torch"},
        {"cuda": "acc.Stream()"},
    ),
    Pair(
        "is_synchronized_device", 13, "acc.is_synchronized_device()", *_both("floor.is_synchronized_device()", "floor")
    ),
    Pair(
        "is_available",
        12,
        "acc.is_available()",
        {"cpu": "torch.cpu.is_available()", "cuda": "torch.cuda.is_available()"},
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair(
        "get_rng_state",
        11,
        "acc.get_rng_state()",
        {"cpu": "torch.get_rng_state()", "cuda": "torch.cuda.get_rng_state()"},
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair(
        "max_memory_allocated",
        11,
        "acc.max_memory_allocated()",
        {"cpu": "rss()", "cuda": "torch.cuda.max_memory_allocated()"},
        {"cpu": "expression", "cuda": "torch"},
    ),
    Pair(
        "FloatTensor",
        11,
        "acc.FloatTensor(data)",
        {
            "cpu": "torch.tensor(data, dtype=torch.float32, device='cpu')",
            "cuda": "torch.tensor(data, dtype=torch.float32, device='cuda')",
        },
        {"cpu": "torch", "cuda": "torch"},
    ),
    Pair(
        "capture_to_graph",
        9,
        "with acc.capture_to_graph(acc.create_graph()): body()",
        {
            "cpu": "with floor.capture_to_graph(floor.create_graph()): body()",
            "cuda": "with torch.cuda.graph(torch.cuda.CUDAGraph()): body()",
        },
        {"cpu": "floor", "cuda": "torch"},
    ),
    Pair(
        "replay_graph",
        9,
        "acc.replay_graph(graph)",
        {"cpu": "floor.replay_graph(graph)", "cuda": "graph.replay()"},
        {"cpu": "floor", "cuda": "torch"},
    ),
)


FLOOR_SOURCE = """
class Floor:
    def device_name(self, device_index=None):
        if device_index is None:
            return {device!r}
        return {indexed!r}.format(device_index)
    def resolves_data_dependency(self):
        return {rdd!r}
    def is_synchronized_device(self):
        return {sync!r}
    def pin_memory(self, tensor, make_copy=True, match_shape=True):
        if not isinstance(tensor, torch.Tensor):  # the contract refuses anything else, naming the member
            raise TypeError("pin_memory takes a torch.Tensor")
        if make_copy:
            return {pinned_copy}
        return torch.empty(tensor.shape if match_shape else tensor.numel(), dtype=tensor.dtype, pin_memory=True)
    def empty_cache(self):
        return None
    def create_graph(self):
        return None
    def capture_to_graph(self, graph, pool=None, stream=None):
        return nullcontext()
    def replay_graph(self, graph):
        return None
floor = Floor()
def on_device(t):
    return t.device.type == {device!r}
def local_rank():
    return int(os.environ.get("LOCAL_RANK", 0))
def body():
    x.mul_(1.0)
"""
"""The floors and expressions, as user code would write them (compiled from source, not accelhal's)."""


def namespace(acc: Any) -> dict[str, Any]:
    """Everything the statements of :data:`PAIRS` refer to, for ``acc``'s device type."""
    import torch

    device = acc.device_type
    x = torch.ones(16, device=device)
    ns: dict[str, Any] = {
        "acc": acc,
        "torch": torch,
        "x": x,
        "host": torch.ones(256),
        "data": [1.0, 2.0, 3.0, 4.0],
        "os": os,
        "nullcontext": contextlib.nullcontext,
    }
    source = FLOOR_SOURCE.format(
        device=acc.device_name(),
        indexed="cpu" if device == "cpu" else device + ":{}",
        pinned_copy="tensor" if device == "cpu" else "tensor.pin_memory()",
        rdd=acc.resolves_data_dependency(),
        sync=acc.is_synchronized_device(),
    )
    exec(source, ns)  # plain Python, as user code would define it
    if device == "cpu":
        import psutil

        process = psutil.Process()
        ns["rss"] = lambda: process.memory_info().rss
        ns["side"] = acc.Stream() if acc.Stream is not None else None
        ns["torch_side"] = torch.cpu.Stream()
        ns["graph"] = acc.create_graph()
        assert ns["graph"] is None and ns["floor"].create_graph() is None
    else:
        ns["side"] = ns["torch_side"] = acc.Stream()
        graph = acc.create_graph()
        static = torch.ones(1 << 16, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            static.mul_(1.0)  # warm the kernel up outside the capture, as torch's docs ask
        torch.cuda.current_stream().wait_stream(side)
        with acc.capture_to_graph(graph):
            static.mul_(1.0)
        ns["graph"] = graph
    return ns


def time_pairs(
    pairs: tuple[Pair, ...], ns: dict[str, Any], device: str, method: Method, clock: Callable[[], float]
) -> SuiteResult:
    """Time each pair's accelhal and direct statements for ``device`` (a key of the pairs' dicts)."""
    rows = []
    targets = []
    ratios: dict[str, float] = {}
    raw: dict[str, Any] = {}
    for pair in pairs:
        statements = {"accelhal": pair.statement(device), "direct": pair.direct[device]}
        comparison = compare_statements(statements, ns, method, clock=clock)
        ratio = comparison.ratio("accelhal", "direct")
        ours, theirs = comparison.samples["accelhal"], comparison.samples["direct"]
        ratios[pair.member] = ratio.median
        rows.append(
            [
                pair.member,
                str(pair.uses),
                f"`{pair.direct[device]}`",
                pair.kind[device],
                fmt(ours.median, "ns"),
                fmt(ours.iqr, "ns"),
                fmt(theirs.median, "ns"),
                fmt(theirs.iqr, "ns"),
                fmt(ratio.median, "x"),
                fmt(ratio.iqr, "x"),
            ]
        )
        targets.append(Target(f"{device}: {pair.member} / direct", ratio.median, LIMIT, "x", ratio.iqr))
        raw[pair.member] = {
            "accelhal": pair.statement(device),
            "direct": pair.direct[device],
            "kind": pair.kind[device],
            "accelhal_ns": ours.summary(),
            "direct_ns": theirs.summary(),
            "ratio": ratio.summary(),
        }
    return SuiteResult(
        suite=f"members-{device}",
        title=f"The {len(pairs)} most-used members on {device}: accelhal vs the direct torch expression (ns per call)",
        headers=["member", "DS uses", "direct", "kind", "accelhal", "IQR", "direct", "IQR", "ratio", "IQR"],
        rows=rows,
        targets=targets,
        raw=raw,
        member_ratios=ratios,
    )


def run(method: Method, device: str = "cpu") -> SuiteResult:
    """Time every pair on the active accelerator (which must be of ``device`` type)."""
    import accelhal

    acc = accelhal.get_accelerator()
    if acc.device_type != device:
        raise RuntimeError(f"the members suite for {device!r} needs that backend active, got {acc.name!r}")
    clock = time.process_time if device == "cpu" else time.perf_counter  # device work is asynchronous
    return time_pairs(PAIRS, namespace(acc), device, method, clock)
