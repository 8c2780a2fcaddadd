"""Train small models with Accelerate and transformers' Trainer; print each run's record as JSON (run as a script).

    python tests/compat/accelerate_train.py accelhal accelerate-cpu accelhal:bf16
    torchrun --nproc-per-node 2 --standalone tests/compat/accelerate_train.py accelhal

A run is ``FLAVOUR[:PRECISION]`` (precision ``no`` by default, ``bf16``, ``fp16``):

* ``accelhal``: :func:`accelhal.compat.accelerate.install`, then ``Accelerator()``;
* ``accelerate``: ``Accelerator()`` without accelhal (Accelerate's own device choice);
* ``accelerate-cpu``: ``Accelerator(cpu=True)`` (Accelerate's own cpu path);
* ``trainer-accelhal``, ``trainer``, ``trainer-cpu``: transformers' ``Trainer`` likewise
  (``use_cpu=True`` for ``-cpu``), on a small Llama built from a config;
* ``checks``: with the adapter installed, what a program sees of seeding, memory,
  checkpointed generators, refusals and the undo (one record, no training).

Runs go one after the other in this process, each from ``set_seed(0)`` with Accelerate's
state reset; launched runs share the process group the first one starts (Accelerate keeps an
initialized group; a second group in one launch may meet the first one's rendezvous keys).
Every rank prints ``RESULT <json>`` lines; a run that accelhal refuses prints
its error instead of losses.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from accelhal.errors import AccelhalError

FEATURES, HIDDEN, SAMPLES, BATCH, STEPS = 8, 16, 64, 8, 8
VOCAB, SEQUENCE = 64, 16


def _regression_data() -> torch.utils.data.TensorDataset:
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(SAMPLES, FEATURES, generator=gen)
    w = torch.randn(FEATURES, 1, generator=gen)
    return torch.utils.data.TensorDataset(x, torch.tanh(x @ w) + 0.1 * torch.randn(SAMPLES, 1, generator=gen))


class Regression(torch.nn.Module):
    """Two linear layers; remembers where its input was and the autocast it ran under."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
        self.seen: dict[str, Any] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kind = x.device.type
        autocast = str(torch.get_autocast_dtype(kind)) if torch.is_autocast_enabled(kind) else None
        self.seen = {"batch_device": str(x.device), "autocast": autocast}
        out: torch.Tensor = self.net(x)
        return out


@contextlib.contextmanager
def _adapter(enabled: bool) -> Iterator[None]:
    """The adapter installed for the run when ``enabled``; Accelerate's state reset before and after."""
    from accelerate.state import AcceleratorState, GradientState

    from accelhal.compat.accelerate import install, uninstall

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    if enabled:
        install()
    try:
        yield
    finally:
        uninstall()
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()


def _members(*objects: Any) -> dict[str, Any]:
    """Every public attribute of ``objects`` that is not a method, as a value that compares (or its type's name).

    The member-by-member record of an ``Accelerator`` and its state, to compare with Accelerate's own run.
    """
    import enum

    found: dict[str, Any] = {}
    for obj in objects:
        for name in sorted(n for n in dir(obj) if not n.startswith("_")):
            key = f"{type(obj).__name__}.{name}"
            try:
                value = getattr(obj, name)
            except Exception as exc:  # a member that raises in this run: its exception is the answer
                found[key] = f"raises {type(exc).__name__}"
                continue
            if isinstance(value, (enum.Enum, torch.device)):
                found[key] = str(value)
            elif isinstance(value, (bool, int, float, str, type(None))):
                found[key] = value
            elif not callable(value):
                found[key] = type(value).__name__
    return found


def _state_record(state: Any) -> dict[str, Any]:
    return {
        "distributed_type": str(state.distributed_type).rpartition(".")[2],
        "backend": state.backend,
        "device": str(state.device),
        "rank": state.process_index,
        "local_rank": state.local_process_index,
        "world_size": state.num_processes,
    }


class _Caught(logging.Handler):
    """Keeps the messages of the records it is given."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _accelhal_warnings() -> Iterator[list[str]]:
    """The warnings accelhal logs in the ``with`` block."""
    caught = _Caught()
    logging.getLogger("accelhal").addHandler(caught)
    try:
        yield caught.messages
    finally:
        logging.getLogger("accelhal").removeHandler(caught)


def train_accelerate(flavour: str, precision: str) -> dict[str, Any]:
    """Accelerate's loop: prepare, forward, ``backward``, step, for :data:`STEPS` steps."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    with _adapter(flavour == "accelhal"), _accelhal_warnings() as warned:
        accelerator = Accelerator(cpu=flavour == "accelerate-cpu", mixed_precision=precision)
        set_seed(0)
        model = Regression()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = torch.utils.data.DataLoader(_regression_data(), batch_size=BATCH, shuffle=True)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        plain = accelerator.unwrap_model(model)
        losses: list[float] = []
        while len(losses) < STEPS:
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x).float(), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
                losses.append(loss.detach().float().item())
                if len(losses) == STEPS:
                    break
        return {
            **_state_record(accelerator.state),
            "mixed_precision": accelerator.mixed_precision,
            "param_device": str(plain.net[0].weight.device),
            "model_class": type(model).__name__,
            **plain.seen,
            "warnings": warned,
            "losses": losses,
            "members": _members(accelerator, accelerator.state),
        }


def _llama(transformers: Any) -> Any:
    """A 2-layer Llama from a config: ReLU and eager attention, whose kernels every device here computes alike."""
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=SEQUENCE,
        hidden_act="relu",
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    config._attn_implementation = "eager"
    return transformers.LlamaForCausalLM(config)


class _Tokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """Counting sequences from random starts (``7, 8, 9, ...`` modulo the vocabulary): a next token to learn."""

    def __init__(self) -> None:
        starts = torch.randint(0, VOCAB, (SAMPLES, 1), generator=torch.Generator().manual_seed(99))
        self.ids = (starts + torch.arange(SEQUENCE)) % VOCAB

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


def train_trainer(flavour: str, precision: str) -> dict[str, Any]:
    """transformers' Trainer: a 2-layer Llama from a config, :data:`STEPS` steps; the loss of each step."""
    import transformers

    imported_before = "transformers.training_args" in sys.modules  # else the adapter patches it on import
    losses: list[float] = []

    class Recording(transformers.Trainer):
        def compute_loss(self, model: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            result = super().compute_loss(model, inputs, *args, **kwargs)
            loss = result[0] if isinstance(result, tuple) else result
            losses.append(loss.detach().float().item())
            self.batch_device = str(inputs["input_ids"].device)
            return result

    with _adapter(flavour == "trainer-accelhal"), tempfile.TemporaryDirectory() as out:
        transformers.set_seed(0)
        model = _llama(transformers)
        args = transformers.TrainingArguments(
            output_dir=out,
            max_steps=STEPS,
            per_device_train_batch_size=BATCH,
            learning_rate=1e-2,
            use_cpu=flavour == "trainer-cpu",
            bf16=precision == "bf16",
            fp16=precision == "fp16",
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            disable_tqdm=True,
            dataloader_num_workers=0,
            seed=0,
        )
        trainer = Recording(model=model, args=args, train_dataset=_Tokens())
        trainer.train()
        return {
            **_state_record(trainer.accelerator.state),
            "training_args_imported_before_install": imported_before,
            "args_device": str(args.device),
            "n_gpu": args.n_gpu,
            "param_device": str(next(model.parameters()).device),
            "batch_device": trainer.batch_device,
            "losses": losses,
        }


def _error(call: Callable[[], object]) -> str | None:
    try:
        call()
    except AccelhalError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@contextlib.contextmanager
def _one_launched_rank() -> Iterator[None]:
    """The variables torchrun gives the one rank of a one-process run, for the ``with`` block."""
    launched = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    saved = {name: os.environ.get(name) for name in launched}
    os.environ.update(launched)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def checks() -> dict[str, Any]:
    """What a program sees with the adapter installed, beyond training; then after :func:`uninstall`."""
    import accelerate.utils
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, PartialState

    import accelhal
    from accelhal.compat.accelerate import install, installed, is_installed

    own_get_max_memory = accelerate.utils.get_max_memory
    out: dict[str, Any] = {"own_max_memory": sorted(map(str, own_get_max_memory()))}
    with _adapter(True):
        acc = accelhal.get_accelerator()
        if not acc.communication_backend_name():
            with _one_launched_rank():
                out["launched_without_collectives"] = _error(PartialState)
        accelerator = Accelerator()
        out.update(_state_record(accelerator.state), backend_name=acc.name, installed=is_installed())
        accelerate.utils.set_seed(1234)
        out["device_seed"] = acc.initial_seed()
        out["max_memory"] = sorted(map(str, accelerate.utils.get_max_memory()))
        accelerator.free_memory()  # Accelerate's clear_device_cache(): the backend's empty_cache()
        with tempfile.TemporaryDirectory() as directory:
            accelerator.save_state(directory)
            drawn = torch.rand(4, device=accelerator.device).tolist()
            torch.rand(4, device=accelerator.device)  # move the device generator on
            accelerator.load_state(directory)
            out["device_rng_restored"] = torch.rand(4, device=accelerator.device).tolist() == drawn
            out["checkpoint_files"] = sorted(os.listdir(directory))
        out["unknown_backend"] = _error(lambda: install("nosuchbackend"))
    out["after_uninstall"] = {
        "installed": is_installed(),
        "get_max_memory_is_accelerates": accelerate.utils.get_max_memory is own_get_max_memory,
        "device": str(Accelerator().device),
        "install_once_state_exists": _error(install),
    }
    AcceleratorState._reset_state(reset_partial_state=True)
    with installed() as acc:
        out["context_manager"] = {"inside": is_installed(), "backend": acc.name}
    out["context_manager"]["after"] = is_installed()
    return out


def read_results(output: str) -> list[dict[str, Any]]:
    """Every ``RESULT`` record in ``output``, by rank (ranks share stdout, so lines may interleave)."""
    decoder = json.JSONDecoder()
    records = [decoder.raw_decode(chunk)[0] for chunk in output.split("RESULT ")[1:]]
    return sorted(records, key=lambda record: int(record.get("rank", 0)))


def start(runs: Sequence[str], launcher: Sequence[str] = (), **env: str) -> subprocess.Popen[str]:
    """This script with ``runs`` in a fresh process (after ``launcher``: a launcher's command), ``env`` added.

    The environment is :func:`tests.compat.child_environment`'s, with Python's warnings off
    and the Hugging Face hub offline.
    """
    return start_command([*(launcher or [sys.executable]), __file__, *runs], env)


def start_command(command: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    """``command`` in a fresh process in ``cwd`` (default: the repository), :func:`start`'s environment and ``env``."""
    from tests.compat import REPO, child_environment

    environment = child_environment(HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore", **env)
    pipe = subprocess.PIPE
    return subprocess.Popen(list(command), stdout=pipe, stderr=pipe, text=True, env=environment, cwd=cwd or REPO)


def outputs(procs: Mapping[str, subprocess.Popen[str]]) -> dict[str, subprocess.CompletedProcess[str]]:
    """What each of ``procs`` wrote, and its exit status, once all ended (in ten minutes each); none is left running."""
    try:
        done = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=600)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        return done
    finally:
        for proc in procs.values():
            _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    """End ``proc`` if it still runs: SIGTERM first, on which a launcher stops its ranks (each in its own session)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def finish(procs: Mapping[str, subprocess.Popen[str]]) -> dict[str, list[dict[str, Any]]]:
    """The records each of ``procs`` printed, once all ended well (:func:`outputs`)."""
    records = {}
    for name, done in outputs(procs).items():
        assert done.returncode == 0, f"{done.args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        records[name] = read_results(done.stdout)
    return records


def run(spec: str) -> dict[str, Any]:
    """One run's record (its error, for a run accelhal refuses)."""
    flavour, _, precision = spec.partition(":")
    precision = precision or "no"
    try:
        if flavour == "checks":
            record = checks()
        elif flavour.startswith("trainer"):
            record = train_trainer(flavour, precision)
        else:
            record = train_accelerate(flavour, precision)
    except AccelhalError as exc:
        record = {"error": f"{type(exc).__name__}: {exc}", "rank": int(os.environ.get("RANK", "0"))}
    return {"run": spec, **record}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="FLAVOUR[:PRECISION]")
    for spec in parser.parse_args().runs:
        print("RESULT " + json.dumps(run(spec)), flush=True)
    if torch.distributed.is_initialized():
        # As in deepspeed_train.py: the ranks leave together, and interpreter teardown is skipped,
        # where gloo's transport threads have aborted a rank after its results were printed
        # ("terminate called without an active exception", seen once under load).
        # The group is not destroyed: torch before 2.8 destroys it holding the GIL while a gloo worker thread
        # may still need the GIL to free the last collective's tensors (a rank hung so at the floor, torch 2.4.1).
        torch.distributed.barrier()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
