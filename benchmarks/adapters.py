"""A training step through each framework adapter against the framework's own path: target ratio <= 1.01.

Four frameworks, each in a child process of its own (``python -m benchmarks.adapters FRAMEWORK``), where
both paths are built and timed side by side:

* ``lightning``: a ``Trainer.fit`` of ``STEPS`` steps with ``accelerator="accelhal"`` (after
  :func:`accelhal.compat.lightning.register`) against Lightning's own accelerator for the device
  (``"cpu"``, ``"cuda"``); a fresh Trainer per block; a callback times each batch
  (``on_train_batch_start`` to ``on_train_batch_end``: forward, backward, optimizer step).
* ``accelerate``: Accelerate's loop (``prepare``, forward, ``accelerator.backward``, step) after
  :func:`accelhal.compat.accelerate.install` against ``Accelerator()`` on its own (``cpu=True`` on the
  host); each block prepares afresh (install and uninstall untimed) and times its steps.
* ``trainer``: transformers' ``Trainer`` on a small Llama built from a config, likewise (``use_cpu`` on
  the host); a callback times ``on_step_begin`` to ``on_step_end``.
* ``deepspeed``: a ZeRO-2 step (forward, ``engine.backward``, ``engine.step``) of one engine, built
  once under DeepSpeed's own accelerator for the device; before each block DeepSpeed's process-wide
  accelerator (what every ``get_accelerator()`` in the step returns) is set to the block's: DeepSpeed's
  own, or the adapter :func:`accelhal.compat.deepspeed.install` returned. One engine for both, so the
  two paths share every tensor and allocation and differ only in the accelerator DeepSpeed calls.

Method: blocks alternate between the two paths in a rotated order (own, accelhal, accelhal, own,
...), after an untimed warm-up block each, with the garbage collector paused during a block. Each
step is timed alone, the device synchronised around it, and a block's figure is its median step (a
stall of the host hits one step, not the block: with sums of 50 steps, the ratio's 95% interval was
up to 19% wide on an H100). The figure is the median of the paired per-round ratios accelhal / own,
with its distribution-free 95% interval (:meth:`benchmarks.method.Sample.median_ci`).
Pairing inside one process is what makes the figure mean something: between processes the same
path's step time varies by more than the target.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.method import Method, Sample
from benchmarks.results import SuiteResult, Target, fmt

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("lightning", "accelerate", "trainer", "deepspeed")
LIMIT = 1.01
STEPS = 50
"""Training steps per timed block (with 10, a ratio's 95% interval was up to 9% wide on an H100)."""
WIDTH, DEPTH, BATCH = 256, 4, 64
"""The MLP's width and depth and the batch, on the host; on cuda :data:`GPU_SHAPE`."""
GPU_SHAPE = (2048, 6, 512)


Block = Callable[[], float]
"""Runs one block of :data:`STEPS` steps; returns the median seconds of its steps."""


def _shape() -> tuple[int, int, int]:
    import torch

    return GPU_SHAPE if torch.cuda.is_available() else (WIDTH, DEPTH, BATCH)


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _mlp() -> Any:
    import torch

    width, depth, _ = _shape()
    torch.manual_seed(0)
    layers: list[Any] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def _batches(count: int = 4) -> list[tuple[Any, Any]]:
    import torch

    width, _, batch = _shape()
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(batch, width, generator=generator), torch.randn(batch, width, generator=generator))] * count


class _Clock:
    """Times each interval between ``start()`` and ``stop()``, the device synchronised at both.

    On cuda, wall time; on the host, the process's CPU time (on a shared machine, time spent waiting
    for a core is not the step's cost; the child runs torch on one thread there).
    """

    def __init__(self) -> None:
        import torch

        self.laps: list[float] = []
        self._since = 0.0
        self._now = time.perf_counter if torch.cuda.is_available() else time.process_time

    def start(self) -> None:
        _synchronize()
        self._since = self._now()

    def stop(self) -> None:
        _synchronize()
        self.laps.append(self._now() - self._since)

    @property
    def step_seconds(self) -> float:
        """The median step: a block's figure, robust to a stall of the host that hits one step of a block."""
        return statistics.median(self.laps)


def timed_steps(step: Callable[[int], object]) -> float:
    """The median seconds (:class:`_Clock`'s) of :data:`STEPS` calls ``step(index)``, each timed alone."""
    clock = _Clock()
    for index in range(STEPS):
        clock.start()
        step(index)
        clock.stop()
    return clock.step_seconds


def alternate(blocks: Mapping[str, Block], rounds: int) -> dict[str, Sample]:
    """Run every block once untimed, then ``rounds`` rounds of each in a rotated order; seconds per block."""
    names = list(blocks)
    for name in names:
        blocks[name]()
    samples = {name: Sample([], "s") for name in names}
    for index in range(rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            gc.collect()
            gc.disable()
            try:
                samples[name].values.append(blocks[name]())
            finally:
                gc.enable()
    return samples


# -- the frameworks' blocks (built in the child) ---------------------------------------------------------


def lightning_blocks() -> dict[str, Block]:
    """A fit of :data:`STEPS` steps through Lightning's own accelerator and through accelhal's."""
    import lightning.pytorch as pl
    import torch

    from accelhal.compat.lightning import register

    register()
    own = "cuda" if torch.cuda.is_available() else "cpu"
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*(torch.cat(parts) for parts in zip(*_batches(), strict=True))),
        batch_size=_shape()[2],
    )

    class Model(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = _mlp()

        def training_step(self, batch: list[Any], batch_idx: int) -> Any:
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    class Timing(pl.Callback):
        def __init__(self) -> None:
            self.clock = _Clock()

        def on_train_batch_start(self, *args: Any) -> None:
            self.clock.start()

        def on_train_batch_end(self, *args: Any) -> None:
            self.clock.stop()

    def fit(accelerator: str) -> float:
        timing = Timing()
        trainer = pl.Trainer(
            accelerator=accelerator,
            devices=1,
            max_steps=STEPS,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[timing],
        )
        trainer.fit(Model(), loader)
        return timing.clock.step_seconds

    import logging

    for name in ("lightning.pytorch", "lightning.fabric", "pytorch_lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)  # the Trainer's device lines, once per block
    return {"own": lambda: fit(own), "accelhal": lambda: fit("accelhal")}


def accelerate_blocks() -> dict[str, Block]:
    """Accelerate's loop of :data:`STEPS` steps, on its own and with the adapter installed."""
    import torch
    from accelerate import Accelerator

    from tests.compat.accelerate_train import _adapter as accelerate_adapter

    on_host = not torch.cuda.is_available()
    batches = _batches()

    def loop(adapter: bool) -> float:
        with accelerate_adapter(adapter):
            accelerator = Accelerator(cpu=on_host and not adapter)
            model = _mlp()
            optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
            model, optimizer = accelerator.prepare(model, optimizer)
            device = accelerator.device
            data = [(x.to(device), y.to(device)) for x, y in batches]

            def step(index: int) -> None:
                x, y = data[index % len(data)]
                accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
                optimizer.step()
                optimizer.zero_grad()

            return timed_steps(step)

    return {"own": lambda: loop(False), "accelhal": lambda: loop(True)}


def trainer_blocks() -> dict[str, Block]:
    """transformers' Trainer for :data:`STEPS` steps on a small Llama, on its own and with the adapter."""
    import torch
    import transformers

    from tests.compat.accelerate_train import _adapter as accelerate_adapter

    on_host = not torch.cuda.is_available()
    vocab, sequence, batch = 256, 64, 8
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=sequence,
    )
    ids = torch.randint(0, vocab, (batch * 4, sequence), generator=torch.Generator().manual_seed(2))
    dataset = [{"input_ids": row, "labels": row} for row in ids]
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(config)

    class Timing(transformers.TrainerCallback):
        def __init__(self) -> None:
            self.clock = _Clock()

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.clock.start()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.clock.stop()

    def train(adapter: bool) -> float:
        timing = Timing()
        with accelerate_adapter(adapter), tempfile.TemporaryDirectory() as out:
            args = transformers.TrainingArguments(
                output_dir=out,
                max_steps=STEPS,
                per_device_train_batch_size=batch,
                use_cpu=on_host and not adapter,
                report_to=[],
                save_strategy="no",
                logging_strategy="no",
                disable_tqdm=True,
                dataloader_num_workers=0,
            )
            trainer = transformers.Trainer(
                model=copy.deepcopy(base), args=args, train_dataset=dataset, callbacks=[timing]
            )
            trainer.remove_callback(transformers.trainer_callback.PrinterCallback)  # its end-of-training line
            trainer.train()
        return timing.clock.step_seconds

    transformers.logging.set_verbosity_error()
    return {"own": lambda: train(False), "accelhal": lambda: train(True)}


def deepspeed_blocks() -> dict[str, Block]:
    """A ZeRO-2 step of one engine, driven by DeepSpeed's own accelerator or by the adapter, block by block."""
    import socket

    import torch

    from accelhal.compat.deepspeed import install

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    adapter = install(disable_ops=("ShareMemCommBuilder",))  # before DeepSpeed is imported
    import deepspeed
    from deepspeed.accelerator import set_accelerator

    if torch.cuda.is_available():
        from deepspeed.accelerator.cuda_accelerator import CUDA_Accelerator as Own
    else:
        from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator as Own
    own = Own()
    config = {
        "train_micro_batch_size_per_gpu": _shape()[2],
        "steps_per_print": 10**9,
        "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
        "zero_optimization": {"stage": 2},
    }
    set_accelerator(own)
    model = _mlp()
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    device = own.current_device_name()
    data = [(x.to(device), y.to(device)) for x, y in _batches()]
    accelerators = {"accelhal": adapter, "own": own}

    def steps(name: str) -> float:
        set_accelerator(accelerators[name])

        def step(index: int) -> None:
            x, y = data[index % len(data)]
            engine.backward(torch.nn.functional.mse_loss(engine(x), y))
            engine.step()

        return timed_steps(step)

    return {"own": lambda: steps("own"), "accelhal": lambda: steps("accelhal")}


BLOCKS: dict[str, Callable[[], dict[str, Block]]] = {
    "lightning": lightning_blocks,
    "accelerate": accelerate_blocks,
    "trainer": trainer_blocks,
    "deepspeed": deepspeed_blocks,
}

TITLES = {
    "lightning": "Lightning fit",
    "accelerate": "Accelerate loop",
    "trainer": "transformers Trainer",
    "deepspeed": "DeepSpeed ZeRO-2 step",
}


def child(framework: str) -> None:
    """In the child: build both paths of ``framework``, alternate their blocks, print the seconds as JSON."""
    import torch

    method = Method(**json.loads(os.environ["ACCELHAL_BENCH_METHOD"]))
    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    blocks = BLOCKS[framework]()
    samples = alternate(blocks, method.repeats)
    print(json.dumps({name: sample.values for name, sample in samples.items()}))


def _measure(framework: str, method: Method) -> dict[str, list[float]]:
    env = {**os.environ, "ACCELHAL_BENCH_METHOD": json.dumps(dataclasses.asdict(method))}
    env.pop("ACCELHAL_ACCELERATOR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.adapters", framework], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {framework} child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    data: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def run(method: Method) -> SuiteResult:
    """Every framework's paired ratio accelhal / own, one child process each."""
    rows: list[list[str]] = []
    targets: list[Target] = []
    raw: dict[str, Any] = {"steps_per_block": STEPS}
    for framework in FRAMEWORKS:
        seconds = _measure(framework, method)
        own, ours = Sample(seconds["own"], "s"), Sample(seconds["accelhal"], "s")
        ratio = Sample([a / b for a, b in zip(ours.values, own.values, strict=True)], "x")
        low, high = ratio.median_ci()
        title = TITLES[framework]
        rows += [
            [f"{title}, own", fmt(own.median * 1e3, "ms"), fmt(own.iqr * 1e3, "ms"), "per step"],
            [f"{title}, accelhal", fmt(ours.median * 1e3, "ms"), fmt(ours.iqr * 1e3, "ms"), "per step"],
            [f"{title}, accelhal / own", fmt(ratio.median, "x"), f"{low:.3f}x-{high:.3f}x", "95% interval"],
        ]
        note = f"median's 95% interval {low:.3f}x-{high:.3f}x over {len(ratio.values)} paired blocks of {STEPS} steps"
        targets.append(Target(f"{title}: accelhal / own step time", ratio.median, LIMIT, "x", ratio.iqr, note))
        raw[framework] = {"own": own.summary(), "accelhal": ours.summary(), "ratio": ratio.summary()}
    return SuiteResult(
        suite="adapters",
        title="A training step through each adapter against the framework's own path (ms per step)",
        headers=["figure", "median", "IQR / interval", "note"],
        rows=rows,
        targets=targets,
        raw=raw,
    )


if __name__ == "__main__":
    child(sys.argv[1])
