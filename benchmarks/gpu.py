"""The GPU part: member ratios on cuda, a training loop, and graph capture and replay.

Run on a CUDA machine with ``python3 -m benchmarks --gpu --out DIR``. Member figures on
cuda are taken on the wall clock (the device works asynchronously). Written against
the contract's member names only, so it measures whichever backend ``get_accelerator()``
picks there (it must be one whose ``device_type`` is ``cuda``).

Training loop
    The same small MLP step (forward, backward, SGD step) driven two ways: through
    accelhal (``acc.current_device_name()`` for placement, ``acc.Event(enable_timing=True)``
    around each step, ``acc.memory_allocated()``/``acc.max_memory_allocated()`` read
    every step) and through ``torch.cuda`` directly. Blocks of steps alternate between
    the two; the figure is the median of the paired per-block ratios (limit 1.01). A
    block is ~0.1 s of launch-bound steps whose time scatters by several per cent from
    block to block on the H100 host, so the loop runs ``LOOP_BLOCKS_PER_REPEAT`` times the
    method's repeats (the median's own scatter shrinks with the square root).

Every timed block runs with Python's garbage collector paused and a collection between
blocks, as :mod:`timeit` pauses it: after ``import torch`` a full collection costs ~0.1 s
and would land in whichever block happened to cross the threshold (the objects that
exist before the first block are frozen, ``gc.freeze()``, so the collections between
blocks stay short).

Graphs
    One whole training step captured and replayed, through accelhal
    (``create_graph``/``capture_to_graph``/``replay_graph``) and through
    ``torch.cuda.CUDAGraph``/``torch.cuda.graph``/``replay()``; each is compared with the
    same step run eagerly. The figure is raw torch's speed-up over accelhal's (limit 1.01),
    both taken against the same eager step (the two eager arms run identical code, so
    their difference is noise): per round, accelhal's replay time over torch's.
"""

from __future__ import annotations

import copy
import gc
import time
from collections.abc import Callable, Mapping
from typing import Any

from benchmarks import members
from benchmarks.method import Method, Sample
from benchmarks.results import SuiteResult, Target, fmt

HIDDEN = 1024
LAYERS = 6
BATCH = 256
GRAPH_HIDDEN = 512
GRAPH_LAYERS = 8
GRAPH_BATCH = 32
LOOP_BLOCKS_PER_REPEAT = 4


def _mlp(width: int, depth: int, device: Any) -> Any:
    import torch

    layers: list[Any] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device)


def _train_step(model: Any, optimizer: Any, inputs: Any, target: Any) -> Any:
    import torch

    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(inputs), target)
    loss.backward()
    optimizer.step()
    return loss


def torch_loop(model: Any, optimizer: Any, batches: list[Any], steps: int) -> list[float]:
    """``steps`` training steps with raw ``torch.cuda`` calls; returns per-step event times (ms)."""
    import torch

    device = torch.device("cuda", torch.cuda.current_device())
    times = []
    for i in range(steps):
        inputs, target = batches[i % len(batches)]
        inputs, target = inputs.to(device, non_blocking=True), target.to(device, non_blocking=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        _train_step(model, optimizer, inputs, target)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        torch.cuda.memory_allocated()
        torch.cuda.max_memory_allocated()
    return times


def accelhal_loop(acc: Any, model: Any, optimizer: Any, batches: list[Any], steps: int) -> list[float]:
    """The same loop through the accelerator's members."""
    device = acc.current_device_name()
    times = []
    for i in range(steps):
        inputs, target = batches[i % len(batches)]
        inputs, target = inputs.to(device, non_blocking=True), target.to(device, non_blocking=True)
        start, end = acc.Event(enable_timing=True), acc.Event(enable_timing=True)
        start.record()
        _train_step(model, optimizer, inputs, target)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        acc.memory_allocated()
        acc.max_memory_allocated()
    return times


def _paired(
    method: Method,
    runs: Mapping[str, Callable[[], object]],
    blocks: int | None = None,
    synchronize: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Alternate the runs block by block (rotated order); wall ms per block (``blocks`` rounds, default repeats).

    ``synchronize`` waits for the device before and after each block (default ``torch.cuda.synchronize``).
    """
    import torch

    sync = synchronize or torch.cuda.synchronize
    names = list(runs)
    for _ in range(max(1, method.warmup)):
        for name in names:
            runs[name]()
    samples: dict[str, list[float]] = {n: [] for n in names}
    collecting = gc.isenabled()
    gc.collect()
    gc.freeze()  # what exists now is never collected: the collection between blocks stays cheap
    try:
        for i in range(method.repeats if blocks is None else blocks):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                gc.collect()
                gc.disable()
                sync()
                started = time.perf_counter()
                runs[name]()
                sync()
                samples[name].append((time.perf_counter() - started) * 1e3)
                gc.enable()
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()
        else:
            gc.disable()
    return {n: Sample(v, "ms") for n, v in samples.items()}


def _ci_note(sample: Sample) -> str:
    low, high = sample.median_ci()
    return f"median's 95% interval {low:.3f}x-{high:.3f}x over {len(sample.values)} paired blocks"


def _ratios(numerator: Sample, denominator: Sample) -> list[float]:
    """Paired per-block ratios of two samples taken in the same rounds."""
    return [n / d for n, d in zip(numerator.values, denominator.values, strict=True)]


def training_loop(acc: Any, method: Method, steps: int = 50) -> tuple[list[list[str]], Target, dict[str, Any]]:
    """The training-loop comparison: rows, target and raw data."""
    import torch

    torch.manual_seed(0)
    base = _mlp(HIDDEN, LAYERS, "cpu")
    models = {"torch": copy.deepcopy(base).cuda(), "accelhal": copy.deepcopy(base).cuda()}
    optims = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, m in models.items()}
    batches = [(torch.randn(BATCH, HIDDEN).pin_memory(), torch.randn(BATCH, HIDDEN).pin_memory()) for _ in range(4)]
    runs = {
        "torch": lambda: torch_loop(models["torch"], optims["torch"], batches, steps),
        "accelhal": lambda: accelhal_loop(acc, models["accelhal"], optims["accelhal"], batches, steps),
    }
    samples = _paired(method, runs, blocks=method.repeats * LOOP_BLOCKS_PER_REPEAT)
    ratio = Sample(_ratios(samples["accelhal"], samples["torch"]), "x")
    rows = [
        [f"training loop, {name}", fmt(s.median / steps * 1e3, "us"), fmt(s.iqr / steps * 1e3, "us"), "per step"]
        for name, s in samples.items()
    ]
    rows.append(["training loop, accelhal / torch", fmt(ratio.median, "x"), fmt(ratio.iqr, "x"), "paired blocks"])
    target = Target(
        "cuda: training loop through accelhal / raw torch", ratio.median, 1.01, "x", ratio.iqr, note=_ci_note(ratio)
    )
    return rows, target, {k: s.summary() for k, s in samples.items()} | {"ratio": ratio.summary(), "steps": steps}


def _graph_setup(acc: Any | None) -> tuple[Callable[[], None], Callable[[], None]]:
    """(eager step, replay of the captured step) for one model; through accelhal when ``acc`` is given."""
    import torch

    torch.manual_seed(0)
    model = _mlp(GRAPH_HIDDEN, GRAPH_LAYERS, "cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    static_in = torch.randn(GRAPH_BATCH, GRAPH_HIDDEN, device="cuda")
    static_target = torch.randn(GRAPH_BATCH, GRAPH_HIDDEN, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            _train_step(model, optimizer, static_in, static_target)
    torch.cuda.current_stream().wait_stream(side)
    optimizer.zero_grad(set_to_none=True)
    if acc is None:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _train_step(model, optimizer, static_in, static_target)
        replay: Callable[[], None] = graph.replay
    else:
        graph = acc.create_graph()
        with acc.capture_to_graph(graph):
            _train_step(model, optimizer, static_in, static_target)

        def replay() -> None:
            acc.replay_graph(graph)

    def eager() -> None:
        _train_step(model, optimizer, static_in, static_target)

    return eager, replay


def graphs(acc: Any, method: Method, steps: int = 100) -> tuple[list[list[str]], Target, dict[str, Any]]:
    """Speed-up of replaying a captured step over running it eagerly, accelhal vs raw torch."""
    setups = {"torch": _graph_setup(None), "accelhal": _graph_setup(acc)}

    def repeat(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(steps):
                fn()

        return run

    runs = {}
    for name, (eager, replay) in setups.items():
        runs[f"{name} eager"] = repeat(eager)
        runs[f"{name} replay"] = repeat(replay)
    samples = _paired(method, runs)
    speedup = {name: Sample(_ratios(samples[f"{name} eager"], samples[f"{name} replay"]), "x") for name in setups}
    # The two eager arms run the same code, so their difference is noise: against one eager
    # step E per round, torch's speed-up over accelhal's is (E / replay_torch) / (E / replay_accelhal).
    relative = Sample(_ratios(samples["accelhal replay"], samples["torch replay"]), "x")
    rows = [
        [f"graph step, {n}", fmt(s.median / steps * 1e3, "us"), fmt(s.iqr / steps * 1e3, "us"), ""]
        for n, s in samples.items()
    ]
    rows += [[f"replay speed-up over eager, {n}", fmt(s.median, "x"), fmt(s.iqr, "x"), ""] for n, s in speedup.items()]
    rows.append(
        ["torch speed-up / accelhal speed-up", fmt(relative.median, "x"), fmt(relative.iqr, "x"), "same eager step"]
    )
    target = Target(
        "cuda: graph replay speed-up, raw torch / accelhal",
        relative.median,
        1.01,
        "x",
        relative.iqr,
        note=_ci_note(relative),
    )
    raw = {k: s.summary() for k, s in samples.items()} | {f"speedup {k}": s.summary() for k, s in speedup.items()}
    return rows, target, raw | {"relative": relative.summary(), "steps": steps}


def run(method: Method) -> SuiteResult:
    """Every GPU figure; the member table comes first, then the loop and the graphs."""
    import accelhal

    acc = accelhal.get_accelerator()
    if acc.device_type != "cuda":
        raise RuntimeError(f"the GPU suite needs a cuda backend active, got {acc.name!r} (is a GPU visible?)")
    member_result = members.run(method, "cuda")
    loop_rows, loop_target, loop_raw = training_loop(acc, method)
    graph_rows, graph_target, graph_raw = graphs(acc, method)
    member_result.rows = [
        *member_result.rows,
        *[[r[0], "", "", "", r[1], r[2], "", "", "", r[3]] for r in [*loop_rows, *graph_rows]],
    ]
    member_result.suite = "gpu"
    member_result.title = "GPU: the 20 members on cuda (ns per call), training loop and graphs"
    member_result.targets += [loop_target, graph_target]
    member_result.raw |= {"training_loop": loop_raw, "graphs": graph_raw}
    return member_result
