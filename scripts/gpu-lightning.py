#!/usr/bin/env python3
"""Lightning on a GPU: ``Trainer(accelerator="accelhal")`` against Lightning's own ``"cuda"``, losses side by side.

Run from the repository root on the GPU machine, with Lightning's wheels installed beside
accelhal (``docs/lightning.md`` lists them)::

    python3 scripts/gpu-lightning.py                 # bf16-mixed and 32-true on one GPU
    python3 scripts/gpu-lightning.py --ddp           # and DDP over two GPUs (nccl)
    python3 scripts/gpu-lightning.py --baseline cpu  # the same comparison on the host

The model, data and Trainer settings are those of ``tests/compat/lightning_train.py``
(``seed_everything(0)``, ``deterministic=True``). The accelhal backend is forced to the
baseline's name, so a machine without the device fails instead of comparing on the host.
Exits 1 when a loss differs at all (printing the largest absolute difference), when the
accelhal run trained elsewhere than Lightning's, or when the accelhal run's log lacks its line
saying which backend and device it used (on cuda: or Lightning's own "GPU available: True
(cuda), used: True").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from loss_tables import table, verdict

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "tests" / "compat" / "lightning_train.py"


def _compare(title: str, theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Print one comparison; returns what differs."""
    problems = []
    diff = table(title, ("Lightning", "accelhal"), theirs["losses"], ours["losses"])
    if diff != 0.0:
        problems.append(f"{title}: losses differ, max |diff| {diff:.3g}")
    placed = ("root_device", "device", "param_device", "autocast", "process_group_backend")
    for key in placed:
        if ours.get(key) != theirs.get(key):
            problems.append(f"{title}: {key} is {ours.get(key)!r} with accelhal, {theirs.get(key)!r} with Lightning")
    print("  placed: " + ", ".join(f"{key}={ours.get(key)!r}" for key in placed))
    return problems


def _device_lines(ours: dict[str, Any], baseline: str) -> list[str]:
    """Print Lightning's device lines of the accelhal run; what is missing from accelhal's own line."""
    lines = [line for line in ours.get("log", []) if "available" in line or line.startswith("accelhal:")]
    print("  log: " + " | ".join(lines))
    wanted = [f"(accelhal backend {baseline!r})"]
    if baseline in ("cuda", "mps"):
        wanted.append(f"GPU available: True ({baseline}), used: True")  # Lightning's own line
    return [f"the log lacks {text!r}" for text in wanted if not any(text in line for line in lines)]


def _ddp(baseline: str) -> list[dict[str, Any]]:
    """Two-process runs (Lightning's DDP re-runs the training script per rank): Lightning's, then accelhal's."""
    from tests.compat.lightning_train import read_results

    runs = []
    for run, strategy in ((f"{baseline}:32-true", "ddp"), ("accelhal:32-true", "accelhal-ddp")):
        cmd = [sys.executable, str(TRAIN), f"--run={run}", "--devices=2", f"--strategy={strategy}"]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=os.environ, check=False)
        if out.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}")
        runs.append(read_results(out.stdout))
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="cuda", help="Lightning's own accelerator to compare with (cuda)")
    parser.add_argument("--ddp", action="store_true", help="also compare DDP over two devices")
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    os.environ["ACCELHAL_ACCELERATOR"] = args.baseline
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, str(REPO))
    import lightning
    import torch

    from tests.compat.lightning_train import train

    print(f"torch {torch.__version__}, lightning {lightning.__version__}, baseline {args.baseline!r}")
    if args.baseline == "cuda":
        print(f"device: {torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} visible")
    problems: list[str] = []
    for precision in ("bf16-mixed", "32-true"):
        theirs = train("lightning.pytorch", args.baseline, precision, steps=args.steps)
        ours = train("lightning.pytorch", "accelhal", precision, steps=args.steps)
        problems += _compare(f"single device, {precision}", theirs, ours)
        problems += _device_lines(ours, args.baseline)
    if args.ddp:
        theirs_ranks, ours_ranks = _ddp(args.baseline)
        for theirs, ours in zip(theirs_ranks, ours_ranks, strict=True):
            problems += _compare(f"DDP rank {theirs['rank']} of {theirs['world_size']}, 32-true", theirs, ours)
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
