"""torch.compile with the accelerator's own answer: the compiled / eager training-step time, and correctness.

On the GPU machine it runs with the GPU suites (``python3 -m benchmarks --gpu --out DIR``); alone,
on any machine, with ``python3 -m benchmarks --suite compile``: it measures whichever backend
``get_accelerator()`` picks there.

The training step of :mod:`benchmarks.gpu` (an MLP, MSE loss, backward, SGD) runs two ways from
the same weights: eagerly, and with the model compiled as
``torch.compile(model, backend=acc.get_compile_backend())`` (forward and backward compiled
through AOTAutograd; the optimizer eager). On cuda the model is the GPU suite's (width 1024, 6
layers, batch 256); elsewhere a smaller one (width 256, 4 layers, batch 64), so that a CPU run
stays short.

Correctness comes first: one step of each from the same weights; the figure is the largest
absolute difference of the losses and of every parameter after the step. Then the compiled
model is warmed up (its first call compiles) and the graphs Dynamo compiled are counted; a
graph compiled during the timed blocks is a recompilation (``recompiles``).

Timing: blocks of ``STEPS`` steps alternate between the two (rotated order, the device
synchronised with ``acc.synchronize()`` around each block, the garbage collector paused as in
:mod:`benchmarks.gpu`); the figure is the median of the paired per-block ratios compiled /
eager (below 1: compiling made the step faster). It is a figure, not a target: what Inductor
gains depends on the model and the device.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from benchmarks.gpu import BATCH, HIDDEN, LAYERS, _ci_note, _mlp, _paired, _ratios, _train_step
from benchmarks.method import Method, Sample
from benchmarks.results import SuiteResult, fmt

SMALL = (256, 4, 64)
"""Width, layers and batch of the model off cuda."""

STEPS = 20
"""Training steps per timed block."""


def _difference(eager: Any, compiled: Any) -> float:
    return float((eager.detach() - compiled.detach()).abs().max().cpu())


def run(method: Method) -> SuiteResult:
    """The compiled / eager step ratio on the active accelerator, with the correctness figures."""
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    import accelhal

    acc = accelhal.get_accelerator()
    choice = acc.compile_backend_choice()
    width, layers, batch = (HIDDEN, LAYERS, BATCH) if acc.device_type == "cuda" else SMALL
    device = acc.current_device_name()
    torch.manual_seed(0)
    eager_model = _mlp(width, layers, device)
    compiled_model = copy.deepcopy(eager_model)
    optimizers = {
        name: torch.optim.SGD(m.parameters(), lr=1e-3)
        for name, m in (("eager", eager_model), ("compiled", compiled_model))
    }
    inputs, target = torch.randn(batch, width).to(device), torch.randn(batch, width).to(device)

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(compiled_model, backend=choice.backend)
    started = time.perf_counter()
    loss_compiled = _train_step(compiled, optimizers["compiled"], inputs, target)
    acc.synchronize()
    first_call = time.perf_counter() - started
    loss_eager = _train_step(eager_model, optimizers["eager"], inputs, target)
    difference = max(
        _difference(loss_eager, loss_compiled),
        *(_difference(a, b) for a, b in zip(eager_model.parameters(), compiled_model.parameters(), strict=True)),
    )

    def steps(model: Any, optimizer: Any) -> Any:
        def block() -> None:
            for _ in range(STEPS):
                _train_step(model, optimizer, inputs, target)

        return block

    runs = {"eager": steps(eager_model, optimizers["eager"]), "compiled": steps(compiled, optimizers["compiled"])}
    for run_block in runs.values():
        run_block()  # warm-up: the compiled model's graphs are all built now
    graphs = counters["stats"]["unique_graphs"]
    samples = _paired(method, runs, synchronize=acc.synchronize)
    recompiles = counters["stats"]["unique_graphs"] - graphs
    ratio = Sample(_ratios(samples["compiled"], samples["eager"]), "x")
    label = f"{acc.name}: compiled ({choice.backend}) / eager training step"
    rows = [
        ["compile backend", choice.backend, "", f"{choice.source}: {choice.reason}"],
        ["model", f"{layers} x Linear({width}) + ReLU", "", f"batch {batch}, MSE loss, SGD; {device}"],
        ["first compiled call (compiles)", fmt(first_call * 1e3, "ms"), "", "forward, backward, SGD step"],
        ["max abs difference after one step", f"{difference:.3g}", "", "loss and every parameter, against eager"],
        ["graphs compiled / recompiles while timed", f"{graphs} / {recompiles}", "", ""],
        *[
            [f"step, {name}", fmt(s.median / STEPS * 1e3, "us"), fmt(s.iqr / STEPS * 1e3, "us"), "per step"]
            for name, s in samples.items()
        ],
        [label, fmt(ratio.median, "x"), fmt(ratio.iqr, "x"), _ci_note(ratio)],
    ]
    raw = {k: s.summary() for k, s in samples.items()} | {
        "ratio": ratio.summary(),
        "backend": choice.backend,
        "reason": choice.reason,
        "source": choice.source,
        "max_abs_difference": difference,
        "graphs": graphs,
        "recompiles": recompiles,
        "first_call_ms": first_call * 1e3,
        "steps_per_block": STEPS,
        "model": {"width": width, "layers": layers, "batch": batch, "device": device},
    }
    title = f"torch.compile on {acc.name} with get_compile_backend() ({choice.backend}): compiled / eager step"
    return SuiteResult("compile", title, ["figure", "value", "spread (IQR)", "note"], rows, raw=raw)
