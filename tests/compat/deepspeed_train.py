"""Train a small model with DeepSpeed and print the results as JSON (run as a script, alone or under torchrun).

    python tests/compat/deepspeed_train.py --accelerator accelhal --runs 0 1 2 3 3+offload --steps 4
    torchrun --nproc-per-node 2 tests/compat/deepspeed_train.py --accelerator deepspeed --runs 3 --checkpoint DIR

``--accelerator accelhal`` calls :func:`accelhal.compat.deepspeed.install` before DeepSpeed is
imported; ``deepspeed`` keeps DeepSpeed's own accelerator (``DS_ACCELERATOR`` picks it, as in
DeepSpeed); ``hook`` does nothing: the process gets whatever its environment gives it
(``ACCELHAL_DEEPSPEED=1`` with the ``.pth`` hook installed: accelhal). All skip the JIT build
of DeepSpeed's shared-memory collectives op, so collectives go through the process group
(gloo on cpu): the adapter with ``disable_ops=("ShareMemCommBuilder",)`` (or
``ACCELHAL_DEEPSPEED_DISABLE_OPS``), DeepSpeed's own accelerator by marking the op
incompatible in ``deepspeed.ops.__compatible_ops__`` (the cached probe result DeepSpeed
consults before building it).

A run is a ZeRO stage, ``+offload`` for ``offload_optimizer`` to the CPU. Without offload the
optimizer is ``torch.optim.Adam`` (``"torch_adam": true``, no op build); with it DeepSpeed
picks its ``DeepSpeedCPUAdam``, whose ``cpu_adam`` op is built through the accelerator's op
builder. Stage 3 builds the model under ``deepspeed.zero.Init``, so parameters are
partitioned as they are created. With ``--checkpoint DIR`` each run (or those named by
``--checkpoint-runs``) saves a checkpoint after its steps, takes two more steps, then a
fresh engine loads the checkpoint and takes the same two steps. Full parameters are
gathered (``GatheredParameters``) for a checksum.

Without a launcher (world size 1) the script sets the rendezvous variables itself. Rank 0
prints one JSON object: the accelerator DeepSpeed used, and per run the results of every rank.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import sys
from typing import Any


def _single_process_env() -> None:
    if "RANK" in os.environ:
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.update(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )


def _install(which: str) -> None:
    if which == "accelhal":
        from accelhal.compat.deepspeed import install

        install(disable_ops=("ShareMemCommBuilder",))  # before DeepSpeed is imported: it never detects its own
        return
    import deepspeed

    if which == "deepspeed":
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


def _config(stage: int, offload: bool, dtype: str) -> dict[str, object]:
    zero: dict[str, object] = {"stage": stage}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    config: dict[str, object] = {
        "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": 1,
        "steps_per_print": 10_000,
        "optimizer": {"type": "Adam", "params": {"lr": 0.01, "torch_adam": not offload}},
        "zero_optimization": zero,
    }
    if dtype == "bf16":
        config["bf16"] = {"enabled": True}
    return config


def _engine(config: dict[str, object]) -> Any:
    import deepspeed
    import torch

    torch.manual_seed(1234)
    stage = config["zero_optimization"]["stage"]  # type: ignore[index]
    with deepspeed.zero.Init(config_dict_or_path=config, enabled=stage == 3):
        model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    # a copy: DeepSpeed 0.15 pops "torch_adam" from the dict it is given, so the engine that reloads
    # a checkpoint would get another optimizer than the engine that saved it
    config = copy.deepcopy(config)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    return engine


def _steps(engine: Any, steps: int) -> list[float]:
    import torch
    from deepspeed.accelerator import get_accelerator

    generator = torch.Generator().manual_seed(100 + torch.distributed.get_rank())
    dtype = next(engine.module.parameters()).dtype
    device = get_accelerator().current_device_name()
    x = torch.randn(8, 16, generator=generator).to(device=device, dtype=dtype)
    y = torch.randn(8, 4, generator=generator).to(device=device, dtype=dtype)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        losses.append(float(loss.detach().float().item()))
    return losses


def _gathered(engine: Any) -> dict[str, object]:
    """Every rank's view of the parameters: its partition sizes, and a checksum of the gathered whole."""
    import deepspeed

    params = list(engine.module.parameters())
    partition = [int(p.ds_tensor.numel()) if hasattr(p, "ds_tensor") else int(p.numel()) for p in params]
    with deepspeed.zero.GatheredParameters(params):
        full = [int(p.numel()) for p in params]
        checksum = sum(float(p.detach().double().sum()) for p in params)
    return {"partition_numel": partition, "full_numel": full, "checksum": checksum}


def _cpu_adam(engine: Any) -> dict[str, str] | None:
    """The optimizer DeepSpeed runs, and where its ``cpu_adam`` op module was loaded from (offload only)."""
    optimizer = engine.optimizer
    while optimizer is not None and not hasattr(optimizer, "ds_opt_adam"):
        optimizer = getattr(optimizer, "optimizer", None)
    if optimizer is None:
        return None
    return {"optimizer": type(optimizer).__name__, "op_file": str(getattr(optimizer.ds_opt_adam, "__file__", ""))}


def _run(spec: str, steps: int, dtype: str, checkpoint: str | None, which: str) -> dict[str, object]:
    stage_text, _, option = spec.partition("+")
    config = _config(int(stage_text), option == "offload", dtype)
    engine = _engine(config)
    result: dict[str, object] = {"losses": _steps(engine, steps), "cpu_adam": _cpu_adam(engine)}
    if checkpoint is not None:
        directory = os.path.join(checkpoint, f"{which}-{spec}")
        engine.save_checkpoint(directory, tag="saved")
        continued = _steps(engine, 2)
        engine.destroy()
        engine = _engine(config)
        engine.load_checkpoint(directory, tag="saved")
        result["resumed"] = {"continued": continued, "reloaded": _steps(engine, 2)}
    result.update(_gathered(engine))
    engine.destroy()
    return result


def _accelerator_in_child() -> str:
    """In a fresh child process: the class of DeepSpeed's accelerator there (nothing installed by hand)."""
    from deepspeed.accelerator import get_accelerator

    return type(get_accelerator()).__name__


def _children() -> dict[str, str]:
    """DeepSpeed's accelerator class in a multiprocessing child of each fresh-interpreter start method."""
    import multiprocessing

    found = {}
    for method in ("spawn", "forkserver"):
        with multiprocessing.get_context(method).Pool(1) as pool:
            found[method] = pool.apply(_accelerator_in_child)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accelerator", choices=["accelhal", "deepspeed", "hook"], required=True)
    parser.add_argument("--runs", nargs="+", default=["0", "1", "2"], help="ZeRO stages, '+offload' to offload")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--checkpoint", help="save, continue and reload runs under this directory")
    parser.add_argument("--checkpoint-runs", nargs="+", help="the runs to checkpoint (default: all)")
    parser.add_argument("--children", action="store_true", help="report the accelerator of spawned children")
    parser.add_argument("--local_rank", type=int, help=argparse.SUPPRESS)  # DeepSpeed's launcher passes it
    args = parser.parse_args()
    _single_process_env()
    _install(args.accelerator)

    import deepspeed
    import torch
    from deepspeed.accelerator import get_accelerator

    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name())
    saved = set(args.runs if args.checkpoint_runs is None else args.checkpoint_runs)
    results = {
        spec: _run(spec, args.steps, args.dtype, args.checkpoint if spec in saved else None, args.accelerator)
        for spec in args.runs
    }
    gathered: list[object] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(gathered, results)
    classes: list[object] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(classes, type(get_accelerator()).__name__)
    if torch.distributed.get_rank() == 0:
        accelerator = get_accelerator()
        report = {
            "accelerator_class": type(accelerator).__name__,
            "rank_accelerator_classes": classes,
            "children": _children() if args.children else None,
            "accelerator_name": accelerator._name,
            "device": accelerator.current_device_name(),
            "backend": torch.distributed.get_backend(),
            "world_size": torch.distributed.get_world_size(),
            "shm_op_built": deepspeed.comm.comm.cdb.shm_comm_op is not None,
            "runs": {spec: [ranks[spec] for ranks in gathered] for spec in results},  # type: ignore[index]
        }
        print("RESULT " + json.dumps(report), flush=True)
    # Both ranks leave together, then skip interpreter teardown: on a loaded two-core machine
    # gloo's transport threads have aborted the process at shutdown ("terminate called without
    # an active exception", seen once with DeepSpeed's own CPU accelerator) after the result
    # was printed. What this script checks is the training, which is over by now. Nor is the
    # group destroyed: on torch before 2.8 its destructor holds the GIL while it joins gloo's
    # worker threads, and one still freeing the last all_gather's tensors waits for the GIL;
    # the rank never left (docs/distributed.md, "Tearing down"; seen at the floor, torch 2.4.1,
    # under DeepSpeed's launcher, which waited for it forever).
    torch.distributed.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
