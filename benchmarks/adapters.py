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

Two figures per framework, from the same child:

* **What accelhal adds to a step** (the target). During the steps of one block through the adapter,
  a profiler (:class:`Probe`) records every call that enters accelhal's code from outside it
  (accelhal's own calls beneath it are part of it): which function, from where, with which
  arguments, how many per step. Each recorded call is then replayed in a loop, against the
  framework's own counterpart where there is one (DeepSpeed: the same member of its own
  accelerator, with the same arguments) and against no call at all where the framework's own
  path makes none (everything else), in ``repeats`` interleaved rounds (:func:`added_per_step`).
  A round's figure is ``1 + sum(calls per step x (accelhal's call - the counterpart)) / step``,
  ``step`` the median step of the framework's own path below; the target is the median of the
  rounds, with its distribution-free 95% interval. A call's cost is measured over thousands of
  repetitions, so the interval is a small fraction of a per cent, where the end-to-end ratio's
  is a few per cent on a GPU (a step's time varies by more than the 1% it judges).
* **End to end** (a cross-check): blocks alternate between the two paths in a rotated order
  (own, accelhal, accelhal, own, ...), after an untimed warm-up block each, with the garbage
  collector paused during a block. Each step is timed alone, the device synchronised around it,
  and a block's figure is its median step. The figure is the median of the paired per-round
  ratios accelhal / own, with its 95% interval (:meth:`benchmarks.method.Sample.median_ci`).
  Pairing inside one process is what makes the figure mean something: between processes the
  same path's step time varies by more than the target. It sees what the direct figure cannot:
  a framework that takes another branch of its own code because of the adapter.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gc
import inspect
import json
import math
import operator
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
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
Counterpart = Callable[["Call"], "Replay | None"]
"""A framework's own call for a recorded call into accelhal, as a :class:`Replay`; ``None``: the default one."""


@dataclasses.dataclass(frozen=True)
class Paths:
    """A framework's two paths (:data:`Block` by name, ``"own"`` and ``"accelhal"``) and its counterparts."""

    blocks: dict[str, Block]
    counterpart: Counterpart = lambda call: None


@dataclasses.dataclass
class Call:
    """A call that entered accelhal's code from outside it during a probed step: what, from where, how often."""

    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    local_names: dict[str, Any]
    """The frame's variables at entry: the arguments, and a closure's free variables."""
    entry: str
    """``"module.py:function"`` of accelhal's code entered."""
    caller: str
    """``"module.py:function"`` of the framework's code that called it."""
    count: int = 0


@dataclasses.dataclass(frozen=True)
class Replay:
    """A recorded call made again: accelhal's and the framework's own (``None``: the own path makes none)."""

    what: str
    """What is called (accelhal's function, or the member both paths call)."""
    ours: Callable[[], object]
    own: Callable[[], object] | None
    site: str = ""
    """``what``, and the framework's function that calls it."""
    per_step: float = 0.0


def _accelhal_prefixes() -> tuple[str, ...]:
    import accelhal
    import accelhal_backends

    return (str(Path(accelhal.__file__).parent) + os.sep, *(str(Path(p)) + os.sep for p in accelhal_backends.__path__))


def _function_of(frame: types.FrameType) -> Callable[..., Any]:
    """The function object running in ``frame``: a method or property of its first argument's class, or a closure."""
    code, local_names = frame.f_code, frame.f_locals
    first = local_names.get(code.co_varnames[0]) if code.co_argcount else None
    for cls in type(first).__mro__ if first is not None else ():
        member = cls.__dict__.get(code.co_name)
        for candidate in (member, getattr(member, "fget", None), getattr(member, "__func__", None)):
            if isinstance(candidate, types.FunctionType) and candidate.__code__ is code:
                return candidate
    for referrer in gc.get_referrers(code):
        if isinstance(referrer, types.FunctionType) and referrer.__code__ is code:
            cells = referrer.__closure__ or ()
            if all(c.cell_contents is local_names.get(n) for n, c in zip(code.co_freevars, cells, strict=True)):
                return referrer
    raise LookupError(f"no function object runs {_qualname(code)} ({code.co_filename}:{code.co_firstlineno})")


def _arguments(frame: types.FrameType) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword arguments ``frame``'s function was called with (read at its entry)."""
    code, local_names = frame.f_code, frame.f_locals
    names = code.co_varnames
    positional, keyword = code.co_argcount, code.co_kwonlyargcount
    args = [local_names[name] for name in names[:positional]]
    kwargs = {name: local_names[name] for name in names[positional : positional + keyword]}
    rest = positional + keyword
    if code.co_flags & inspect.CO_VARARGS:
        args += local_names[names[rest]]
        rest += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(local_names[names[rest]])
    return tuple(args), kwargs


def _qualname(code: types.CodeType) -> str:
    name: str = getattr(code, "co_qualname", code.co_name)  # Python 3.11
    return name


def _where(frame: types.FrameType | None) -> str:
    return f"{Path(frame.f_code.co_filename).name}:{_qualname(frame.f_code)}" if frame is not None else "?"


class Probe:
    """Records, while on (:meth:`on`/:meth:`off`), each call that enters accelhal's code from outside it.

    A profiler (``sys.setprofile``, this thread) sees every Python function called; a call is
    recorded when its code lies in accelhal's packages and no accelhal frame is running below it,
    so each entry is counted once with everything it calls (accelhal's or not) inside it. Calls are
    told apart by function and call site; the first call's arguments are kept for :func:`replays`.
    Members read through C getters (``operator.attrgetter`` properties) run no Python frame and are
    not seen.
    """

    def __init__(self) -> None:
        self.calls: dict[tuple[Any, ...], Call] = {}
        self.steps = 0
        self._prefixes = _accelhal_prefixes()
        self._depth = 0

    def on(self) -> None:
        """Start recording a step."""
        self.steps += 1
        self._depth = 0
        sys.setprofile(self._profile)

    def off(self) -> None:
        """Stop recording."""
        sys.setprofile(None)

    def _profile(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(self._prefixes):
            if self._depth == 0:
                self._record(frame)
            self._depth += 1
        elif event == "return" and self._depth and frame.f_code.co_filename.startswith(self._prefixes):
            self._depth -= 1

    def _record(self, frame: types.FrameType) -> None:
        caller = frame.f_back
        key = (
            frame.f_code,
            caller.f_code if caller else None,
            *(frame.f_locals.get(n) for n in frame.f_code.co_freevars),
        )
        call = self.calls.get(key)
        if call is None:
            args, kwargs = _arguments(frame)
            call = self.calls[key] = Call(
                _function_of(frame), args, kwargs, dict(frame.f_locals), _where(frame), _where(caller)
            )
        call.count += 1


def replays(probe: Probe, counterpart: Counterpart) -> list[Replay]:
    """Each call ``probe`` recorded as a :class:`Replay`: ``counterpart``'s, else the call against none."""
    made = []
    for call in probe.calls.values():
        per_step = call.count / max(probe.steps, 1)
        replay = counterpart(call) or Replay(
            call.entry, functools.partial(call.function, *call.args, **call.kwargs), None
        )
        replay = dataclasses.replace(replay, site=f"{replay.what} <- {call.caller}", per_step=per_step)
        for side, function in (("accelhal's", replay.ours), ("the own path's", replay.own or _nothing)):
            try:
                function()
            except Exception as exc:
                raise RuntimeError(f"{side} call of {replay.site} fails when made again: {exc!r}") from exc
        made.append(replay)
    return made


def _nothing() -> None:
    """What the framework's own path calls where accelhal's path makes a call it does not (timed as a call)."""


def _loop_seconds(function: Callable[[], object], loops: int, clock: Callable[[], float]) -> float:
    repeat = range(loops)
    started = clock()
    for _ in repeat:
        function()
    return (clock() - started) / loops


def added_per_step(
    calls: list[Replay], rounds: int, min_batch_s: float, clock: Callable[[], float]
) -> tuple[list[float], list[dict[str, float]]]:
    """The seconds accelhal's calls add to a step, per round; and each call's two costs (seconds), per round.

    Each call and its counterpart run in loops lasting at least ``min_batch_s`` (calibrated on
    accelhal's), one after the other, the order swapped every round; the garbage collector runs
    before each round and is paused during it. A call the own path does not make is set against
    a call of an empty function: the call itself is counted as accelhal's. A round adds
    ``per_step x (ours - own)`` over the calls; without calls, 0.
    """
    loops = []
    for call in calls:
        count = 1
        while _loop_seconds(call.ours, count, clock) * count < min_batch_s:
            count *= 10
        loops.append(count)
    added: list[float] = []
    costs: list[dict[str, float]] = []
    for index in range(-1, rounds if calls else 0):  # round -1: untimed warm-up
        total = 0.0
        row: dict[str, float] = {}
        gc.collect()
        gc.disable()
        try:
            for call, count in zip(calls, loops, strict=True):
                pair = [("ours", call.ours), ("own", call.own or _nothing)]
                seconds = {name: _loop_seconds(f, count, clock) for name, f in (pair if index % 2 else pair[::-1])}
                total += call.per_step * (seconds["ours"] - seconds["own"])
                row[f"{call.site} ours"], row[f"{call.site} own"] = seconds["ours"], seconds["own"]
        finally:
            gc.enable()
        if index >= 0:
            added.append(total)
            costs.append(row)
    if not calls:
        return [0.0] * rounds, [{} for _ in range(rounds)]
    return added, costs


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


PROBE: Probe | None = None
"""While set, every step a :class:`_Clock` times is also recorded by this probe (its times then mean nothing)."""


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
        if PROBE is not None:
            PROBE.on()

    def stop(self) -> None:
        if PROBE is not None:
            PROBE.off()
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


def lightning_blocks() -> Paths:
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
    return Paths({"own": lambda: fit(own), "accelhal": lambda: fit("accelhal")})


def accelerate_blocks() -> Paths:
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

    return Paths({"own": lambda: loop(False), "accelhal": lambda: loop(True)})


def trainer_blocks() -> Paths:
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
    return Paths({"own": lambda: train(False), "accelhal": lambda: train(True)})


def deepspeed_blocks() -> Paths:
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

    def counterpart(call: Call) -> Replay | None:
        """A member read or called on the adapter: the same on DeepSpeed's own accelerator, with the same arguments."""
        name = call.local_names.get("name")
        if not call.args or call.args[0] is not adapter or not isinstance(name, str):
            return None
        if isinstance(inspect.getattr_static(type(adapter), name), property):
            read = operator.attrgetter(name)
            return Replay(f"accelerator.{name}", functools.partial(read, adapter), functools.partial(read, own))
        invoke = operator.methodcaller(name, *call.args[1:], **call.kwargs)
        return Replay(f"accelerator.{name}()", functools.partial(invoke, adapter), functools.partial(invoke, own))

    return Paths({"own": lambda: steps("own"), "accelhal": lambda: steps("accelhal")}, counterpart)


BLOCKS: dict[str, Callable[[], Paths]] = {
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


def probed(block: Block) -> Probe:
    """The calls into accelhal of one run of ``block``'s steps (:class:`Probe`)."""
    global PROBE
    PROBE = probe = Probe()
    try:
        block()
    finally:
        PROBE = None
        probe.off()
    return probe


def child(framework: str) -> None:
    """In the child: build both paths of ``framework``, measure both figures, print them as JSON.

    The end-to-end blocks first (:func:`alternate`), then one probed block of each path, then the
    replayed calls (:func:`added_per_step`), against the own path's median step.
    """
    import torch

    method = Method(**json.loads(os.environ["ACCELHAL_BENCH_METHOD"]))
    on_host = not torch.cuda.is_available()
    if on_host:
        torch.set_num_threads(1)
    paths = BLOCKS[framework]()
    samples = alternate(paths.blocks, method.repeats)
    own_calls = sum(call.count for call in probed(paths.blocks["own"]).calls.values())
    calls = replays(probed(paths.blocks["accelhal"]), paths.counterpart)
    clock = time.process_time if on_host else time.perf_counter
    added, costs = added_per_step(calls, method.repeats, method.min_batch_s, clock)
    print(
        json.dumps(
            {
                **{name: sample.values for name, sample in samples.items()},
                "own_path_calls": own_calls,
                "calls": {call.site: call.per_step for call in calls},
                "added": added,
                "call_seconds": {
                    key: statistics.median(row[key] for row in costs) for key in (costs[0] if costs else {})
                },
            }
        )
    )


def _measure(framework: str, method: Method) -> dict[str, Any]:
    env = {**os.environ, "ACCELHAL_BENCH_METHOD": json.dumps(dataclasses.asdict(method))}
    env.pop("ACCELHAL_ACCELERATOR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.adapters", framework], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {framework} child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def summarise(framework: str, measured: Mapping[str, Any]) -> tuple[list[list[str]], Target, dict[str, Any]]:
    """A framework's table rows, its target (the direct figure) and its raw data, from its child's figures."""
    own, ours = Sample(measured["own"], "s"), Sample(measured["accelhal"], "s")
    end_to_end = Sample([a / b for a, b in zip(ours.values, own.values, strict=True)], "x")
    added = Sample(measured["added"], "s")
    direct = Sample([1 + seconds / own.median for seconds in added.values], "x")
    calls = sum(measured["calls"].values())
    (low, high), (e2e_low, e2e_high) = direct.median_ci(), end_to_end.median_ci()
    added_low, added_high = added.median_ci()
    title = TITLES[framework]
    rows = [
        [f"{title}, own", fmt(own.median * 1e3, "ms"), fmt(own.iqr * 1e3, "ms"), "per step"],
        [f"{title}, accelhal", fmt(ours.median * 1e3, "ms"), fmt(ours.iqr * 1e3, "ms"), "per step"],
        [
            f"{title}, accelhal / own, end to end",
            fmt(end_to_end.median, "x"),
            f"{e2e_low:.3f}x-{e2e_high:.3f}x",
            f"95% interval, {len(end_to_end.values)} paired blocks of {STEPS} steps",
        ],
        [f"{title}, calls into accelhal", f"{calls:g}", "", "per step, counted by the probe"],
        [
            f"{title}, host time they add",
            fmt(added.median * 1e6, "us"),
            f"{added_low * 1e6:.2f}-{added_high * 1e6:.2f} us",
            "per step, 95% interval",
        ],
        [
            f"{title}, (own + added) / own",
            fmt(direct.median, "x"),
            f"{low:.4f}x-{high:.4f}x",
            f"95% interval, {len(direct.values)} rounds",
        ],
    ]
    note = (
        f"95% interval {low:.4f}x-{high:.4f}x over {len(direct.values)} rounds: {calls:g} calls into accelhal per "
        f"step add {added.median * 1e6:.2f} us to {own.median * 1e3:.2f} ms; end to end {end_to_end.median:.3f}x "
        f"({e2e_low:.3f}x-{e2e_high:.3f}x, {len(end_to_end.values)} paired blocks of {STEPS} steps)"
    )
    target = Target(
        f"{title}: (own step + accelhal's added host time) / own step",
        direct.median,
        LIMIT,
        "x",
        direct.iqr,
        note,
        interval=(low, high),
        resolution=LIMIT - 1,
    )
    raw = {
        "own": own.summary(),
        "accelhal": ours.summary(),
        "end_to_end": end_to_end.summary(),
        "added_seconds": added.summary(),
        "ratio": direct.summary(),
        "calls_per_step": measured["calls"],
        "call_seconds": measured["call_seconds"],
        "own_path_calls": measured["own_path_calls"],
    }
    return rows, target, raw


def run(method: Method) -> SuiteResult:
    """Every framework's two figures, one child process each; the target is the direct figure.

    A framework whose child fails gets a failing target naming the error; the others are still measured.
    """
    rows: list[list[str]] = []
    targets: list[Target] = []
    raw: dict[str, Any] = {"steps_per_block": STEPS}
    for framework in FRAMEWORKS:
        try:
            measured = _measure(framework, method)
        except RuntimeError as exc:
            last = str(exc).strip().splitlines()[-1]
            targets.append(Target(f"{TITLES[framework]}: not measured", math.inf, LIMIT, "x", note=last))
            raw[framework] = {"error": str(exc)}
            continue
        framework_rows, target, raw[framework] = summarise(framework, measured)
        rows += framework_rows
        targets.append(target)
    return SuiteResult(
        suite="adapters",
        title="A training step through each adapter against the framework's own path (per step)",
        headers=["figure", "median", "IQR / interval", "note"],
        rows=rows,
        targets=targets,
        raw=raw,
    )


if __name__ == "__main__":
    child(sys.argv[1])
