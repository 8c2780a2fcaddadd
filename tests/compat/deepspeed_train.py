"""Train a small model with DeepSpeed and print the losses as JSON (run as a script, alone or under torchrun).

    python tests/deepspeed_train.py --accelerator accelhal --stages 0 1 2 --steps 4
    torchrun --nproc-per-node 2 tests/deepspeed_train.py --accelerator deepspeed

``--accelerator accelhal`` installs accelhal's active accelerator into DeepSpeed through
:func:`accelhal.compat.deepspeed.install`; ``deepspeed`` keeps DeepSpeed's own one
(``DS_ACCELERATOR`` picks it, as in DeepSpeed). Both skip the JIT build of DeepSpeed's
shared-memory collectives op, so collectives go through the process group (gloo on cpu):
the adapter with ``disable_ops=("ShareMemCommBuilder",)``, DeepSpeed's own accelerator by
marking the op incompatible in ``deepspeed.ops.__compatible_ops__`` (the cached probe
result DeepSpeed consults before building it). The optimizer is ``torch.optim.Adam``
(``"torch_adam": true``), which needs no op build either.

Without a launcher (world size 1) the script sets the rendezvous variables itself.
Rank 0 prints one JSON object: the accelerator DeepSpeed used, and per ZeRO stage the
losses of every rank.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys


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
    import deepspeed

    if which == "accelhal":
        from accelhal.compat.deepspeed import install

        install(disable_ops=("ShareMemCommBuilder",))
    else:
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


def _config(stage: int, dtype: str) -> dict[str, object]:
    config: dict[str, object] = {
        "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": 1,
        "steps_per_print": 10_000,
        "optimizer": {"type": "Adam", "params": {"lr": 0.01, "torch_adam": True}},
        "zero_optimization": {"stage": stage},
    }
    if dtype == "bf16":
        config["bf16"] = {"enabled": True}
    return config


def _train(stage: int, steps: int, dtype: str) -> list[float]:
    import deepspeed
    import torch
    from deepspeed.accelerator import get_accelerator

    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=_config(stage, dtype)
    )
    rank = torch.distributed.get_rank()
    generator = torch.Generator().manual_seed(100 + rank)
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
    engine.destroy()
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accelerator", choices=["accelhal", "deepspeed"], required=True)
    parser.add_argument("--stages", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    args = parser.parse_args()
    _single_process_env()
    _install(args.accelerator)

    import deepspeed
    import torch
    from deepspeed.accelerator import get_accelerator

    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name())
    results = {str(stage): _train(stage, args.steps, args.dtype) for stage in args.stages}
    gathered: list[object] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(gathered, results)
    if torch.distributed.get_rank() == 0:
        accelerator = get_accelerator()
        report = {
            "accelerator_class": type(accelerator).__name__,
            "accelerator_name": accelerator._name,
            "device": accelerator.current_device_name(),
            "backend": torch.distributed.get_backend(),
            "world_size": torch.distributed.get_world_size(),
            "shm_op_built": deepspeed.comm.comm.cdb.shm_comm_op is not None,
            "losses": {stage: [ranks[stage] for ranks in gathered] for stage in results},  # type: ignore[index]
        }
        print("RESULT " + json.dumps(report), flush=True)
    # Both ranks leave together, then skip interpreter teardown: on a loaded two-core machine
    # gloo's transport threads have aborted the process at shutdown ("terminate called without
    # an active exception", seen once with DeepSpeed's own CPU accelerator) after the result
    # was printed. What this script checks is the training, which is over by now.
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
