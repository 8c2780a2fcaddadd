#!/usr/bin/env python3
"""Accelerate on a GPU: ``Accelerator()`` after accelhal's ``install()`` against Accelerate's own cuda path.

Run from the repository root on the GPU machine, with Accelerate's and transformers' wheels
installed beside accelhal (``docs/accelerate.md`` lists them)::

    python3 scripts/gpu-accelerate.py                  # fp32 and bf16, Accelerate's loop and the Trainer
    python3 scripts/gpu-accelerate.py --ddp            # and two processes under torchrun (nccl)
    python3 scripts/gpu-accelerate.py --baseline cpu   # the same comparison on the host

The runs are those of ``tests/compat/accelerate_train.py`` (``set_seed(0)``, 8 steps): a
small regression with Accelerate's own loop, and a 2-layer Llama built from a config with
transformers' ``Trainer``. Accelerate's own side is ``Accelerator()`` (``Trainer``) without
accelhal, or with ``--baseline cpu`` ``Accelerator(cpu=True)`` (``use_cpu=True``); the
accelhal backend is forced to the baseline's name, so a machine without the device fails
instead of comparing on the host. Exits 1 when a loss differs at all (printing the largest
absolute difference) or when the accelhal run trained elsewhere than Accelerate's.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from loss_tables import table, verdict

REPO = Path(__file__).resolve().parents[1]
PLACED = ("device", "param_device", "batch_device", "autocast", "distributed_type", "backend", "world_size")


def _device(record: dict[str, Any], key: str) -> Any:
    """A device as compared: ``cuda`` is ``cuda:0`` in a single process, ``cpu:0`` is ``cpu`` (one host)."""
    value = record.get(key)
    if not isinstance(value, str):
        return value
    if value.startswith("cpu:") or (record.get("world_size") == 1 and value.endswith(":0")):
        return value.rpartition(":")[0]
    return value


def _compare(title: str, theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Print one comparison; returns what differs."""
    for record in (theirs, ours):
        if "error" in record:
            return [f"{title}: {record['run']} failed: {record['error']}"]
    problems = []
    diff = table(title, ("Accelerate", "accelhal"), theirs["losses"], ours["losses"])
    if diff != 0.0:
        problems.append(f"{title}: losses differ, max |diff| {diff:.3g}")
    for key in PLACED:
        if _device(ours, key) != _device(theirs, key):
            problems.append(f"{title}: {key} is {ours.get(key)!r} with accelhal, {theirs.get(key)!r} with Accelerate")
    print("  placed: " + ", ".join(f"{key}={ours.get(key)!r}" for key in PLACED if key in ours))
    return problems


def _ddp(own: str, visible: str) -> list[list[dict[str, Any]]]:
    """Two ranks under torchrun on the GPUs ``visible``, each running accelhal's loop and then Accelerate's own.

    Returns, per rank, [own, accelhal].
    """
    from tests.compat.accelerate_train import finish, start

    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--standalone"]
    selected = os.environ["ACCELHAL_ACCELERATOR"]
    launched = start(["accelhal", own], torchrun, ACCELHAL_ACCELERATOR=selected, CUDA_VISIBLE_DEVICES=visible)
    records = finish({"ddp": launched})["ddp"]
    runs = {(record["rank"], record["run"]): record for record in records}
    return [[runs[rank, own], runs[rank, "accelhal"]] for rank in (0, 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="cuda", help="the device Accelerate's own run takes (cuda, or cpu)")
    parser.add_argument("--ddp", action="store_true", help="also compare two processes under torchrun")
    args = parser.parse_args()
    os.environ["ACCELHAL_ACCELERATOR"] = args.baseline
    # One process trains on one GPU: with more visible, the Trainer would wrap the model in DataParallel.
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0,1")
    os.environ["CUDA_VISIBLE_DEVICES"] = visible.split(",")[0]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, str(REPO))
    import accelerate
    import torch
    import transformers

    from tests.compat.accelerate_train import run

    own, own_trainer = ("accelerate", "trainer") if args.baseline != "cpu" else ("accelerate-cpu", "trainer-cpu")
    print(f"torch {torch.__version__}, accelerate {accelerate.__version__}, transformers {transformers.__version__}")
    if torch.cuda.is_available():
        print(f"device: {torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} visible")
    problems: list[str] = []
    for precision in ("no", "bf16"):
        name = "fp32" if precision == "no" else precision
        theirs, ours = run(f"{own}:{precision}"), run(f"accelhal:{precision}")
        problems += _compare(f"Accelerate loop, {name}: {own} | accelhal", theirs, ours)
        if precision == "bf16" and args.baseline == "cpu":
            print("\n(Trainer, bf16: transformers refuses it on the host without use_cpu=True, before accelhal)")
            continue
        theirs, ours = run(f"{own_trainer}:{precision}"), run(f"trainer-accelhal:{precision}")
        problems += _compare(f"Trainer (2-layer Llama), {name}: {own_trainer} | trainer-accelhal", theirs, ours)
    if args.ddp:
        for rank, (theirs, ours) in enumerate(_ddp(own, visible)):
            problems += _compare(f"torchrun rank {rank} of 2, fp32: {own} | accelhal", theirs, ours)
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
