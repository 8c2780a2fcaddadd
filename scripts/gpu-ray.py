#!/usr/bin/env python3
"""Ray Train on a GPU: accelhal's path against Ray's own GPU path, one worker each, losses side by side.

Run from the repository root on the GPU machine, with Ray's wheels installed beside accelhal
(``scripts/gpu-ray-wheels.sh`` fetches them; ``docs/ray.md`` says how they travel)::

    python3 scripts/gpu-ray.py                  # one worker on cuda, Ray's GPU path as the baseline
    python3 scripts/gpu-ray.py --baseline cpu   # the same comparison on the host (no GPU needed)

A one-node cluster is started with ``ray start --head`` and exactly the options
``accelhal ray-resources --args`` prints (``--num-gpus=1`` on a one-GPU machine), then one
driver runs two ``TorchTrainer`` fits of ``tests/compat/ray_train.py``: Ray's own
(``use_gpu=True``, Ray's ``TorchConfig``, ``prepare_model``, ``prepare_data_loader``) and
accelhal's (:func:`accelhal.compat.ray.torch_config`, :func:`accelhal.compat.ray.device`),
each one worker asking for the backend's resource. The accelhal backend is forced to the
baseline's name, so a machine without the device fails instead of comparing on the host.
The cluster is removed at the end, whatever happens. Exits 1 when a loss differs at all
(printing the largest absolute difference) or when the two runs trained elsewhere.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.compat import child_environment  # noqa: E402
from tests.compat.ray_cluster import local_cluster  # noqa: E402

RESOURCES = {"cuda": "GPU", "cpu": "CPU"}
"""The Ray resource each worker asks for, by baseline: Ray's own names (``resource_name()`` agrees for cuda)."""


def _ray_start_arguments(env: dict[str, str]) -> list[str]:
    """What ``accelhal ray-resources --args`` prints here (run as a user runs it)."""
    done = subprocess.run(
        [sys.executable, "-m", "accelhal", "ray-resources", "--args"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"accelhal ray-resources failed:\n{done.stderr}")
    return done.stdout.split()


def _train(baseline: str, env: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    resource = RESOURCES[baseline]
    arguments = _ray_start_arguments(env)
    with tempfile.TemporaryDirectory() as out, local_cluster() as cluster:
        address = cluster.start_head(["--num-cpus=2", *arguments], env)
        runs = [f"ray-{baseline}:ray:{resource}:1", f"accelhal-{baseline}:accelhal:{resource}:1"]
        command = [sys.executable, str(REPO / "tests" / "compat" / "ray_train.py"), f"--address={address}"]
        command += [f"--out={out}", *(f"--run={run}" for run in runs)]
        done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            logs = "\n".join(path.read_text()[-3000:] for path in cluster.logs)
            sys.exit(f"the Ray Train runs failed:\n{done.stdout[-3000:]}\n{done.stderr[-8000:]}\n{logs}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return arguments, json.loads(line.removeprefix("RESULT "))


def main() -> int:
    """Train both ways and compare."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", choices=sorted(RESOURCES), default="cuda")
    args = parser.parse_args()
    env = child_environment(ACCELHAL_ACCELERATOR=args.baseline, RAY_TRAIN_ENABLE_PREEMPTION_WATCHER="0")
    arguments, result = _train(args.baseline, env)
    (theirs,), (ours,) = result["runs"][f"ray-{args.baseline}"], result["runs"][f"accelhal-{args.baseline}"]
    print(f"ray start options from 'accelhal ray-resources --args': {' '.join(arguments) or '(none)'}")
    print(f"cluster resources: {json.dumps(result['cluster_resources'], sort_keys=True)}")
    print(f"\nRay Train, one worker, {args.baseline}: Ray's own path | accelhal's path")
    print(f"{'step':>4}  {'Ray':>22}  {'accelhal':>22}  {'|diff|':>10}")
    for step, (a, b) in enumerate(zip(theirs["losses"], ours["losses"], strict=True)):
        print(f"{step:>4}  {a!r:>22}  {b!r:>22}  {abs(a - b):>10.3g}")
    problems = []
    diff = max(abs(a - b) for a, b in zip(theirs["losses"], ours["losses"], strict=True))
    if diff != 0.0:
        problems.append(f"losses differ, max |diff| {diff:.3g}")
    for key in ("device", "batch_device", "param_device", "process_group_backend", "assigned"):
        print(f"  {key}: Ray {theirs[key]!r}, accelhal {ours[key]!r}")
        if theirs[key] != ours[key]:
            problems.append(f"{key} is {ours[key]!r} with accelhal, {theirs[key]!r} with Ray")
    extra = ("backend", "current_device", "rays_device", "visible")
    print("  accelhal worker: " + ", ".join(f"{key}={ours[key]!r}" for key in extra))
    if not ours["device"].startswith(args.baseline):
        problems.append(f"accelhal trained on {ours['device']}, not on {args.baseline}")
    for problem in problems:
        print(f"FAIL: {problem}")
    print("PASS" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
