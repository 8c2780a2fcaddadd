"""DeepSpeed trained through the adapter and through DeepSpeed's own accelerator, side by side.

Each run is a separate process (``deepspeed_train.py``), so DeepSpeed's process-wide state
(its accelerator, its communication backend, the variable ``import deepspeed`` sets)
never leaks between runs or into the caller. World size 2 runs under torchrun.

The ZeRO-Offload runs use DeepSpeed's ``DeepSpeedCPUAdam``, whose ``cpu_adam`` op the
adapter builds through accelhal's op cache. DeepSpeed's own accelerator then JIT-loads the
op from the same build tree (torch's extension directory pointed at it): its ``jit_load``
runs in full and finds nothing to recompile, and both runs execute the same compiled code.

On the GPU machine (``scripts/gpu-deepspeed.sh``)::

    python3 -m tests.compat.deepspeed_compare --backend cuda --out "$OUT/gpu-deepspeed.json"
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.compat import REPO, child_environment

SCRIPT = Path(__file__).with_name("deepspeed_train.py")
RUNS = ("0", "1", "2", "3", "2+offload", "3+offload")
DETECTED_CPU = "Setting accelerator to CPU. If you have GPU or other accelerator, we were unable to detect it."
"""What DeepSpeed logs when its own detection runs and finds no device (on cpu, without DS_ACCELERATOR)."""


def _launch(
    accelerator: str, world_size: int, extra: tuple[str, ...], env: dict[str, str]
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Run the training script (under torchrun for more than one process): its command line and its result."""
    launcher = [sys.executable]
    if world_size > 1:
        launcher += ["-m", "torch.distributed.run", f"--nproc-per-node={world_size}", "--standalone"]
    cmd = [*launcher, str(SCRIPT), "--accelerator", accelerator, *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, env=child_environment(**env), cwd=REPO, timeout=900)
    return " ".join(cmd), out


def train(accelerator: str, *, world_size: int, extra: tuple[str, ...] = (), **env: str) -> dict[str, object]:
    """Run the training script; returns its report (the accelerator used and each rank's results per run)."""
    cmd, out = _launch(accelerator, world_size, extra, env)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))
    report: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    report["deepspeed_detected_cpu"] = DETECTED_CPU in out.stdout + out.stderr
    return report


def train_failure(accelerator: str, *, world_size: int, extra: tuple[str, ...] = (), **env: str) -> str:
    """Run the training script where it must fail (a declared DeepSpeed defect); returns its standard error."""
    cmd, out = _launch(accelerator, world_size, extra, env)
    assert out.returncode != 0, f"{cmd} passed, where DeepSpeed's declared defect should fail it"
    return out.stderr


def side_by_side(ours: dict[str, object], theirs: dict[str, object]) -> str:
    """The losses of every run and rank, accelhal's beside DeepSpeed's own (printed for the record)."""
    lines = [f"world size {ours['world_size']}: run, rank: accelhal | DeepSpeed's {theirs['accelerator_class']}"]
    for spec, ranks in ours["runs"].items():  # type: ignore[attr-defined]
        for rank, (a, b) in enumerate(zip(ranks, theirs["runs"][spec], strict=True)):  # type: ignore[index]
            fmt = " ".join(f"{v:.6f}" for v in a["losses"]), " ".join(f"{v:.6f}" for v in b["losses"])
            lines.append(f"  {spec:>9} r{rank}: {fmt[0]} | {fmt[1]}")
    return "\n".join(lines)


def assert_same_training(
    ours: dict[str, object], theirs: dict[str, object], runs: tuple[str, ...], *, exact: bool = False
) -> None:
    """The same losses, parameters and partitions: to the bit with ``exact``, else within a relative 1e-6."""
    import torch

    assert ours["accelerator_class"] == "AccelhalDeepSpeedAccelerator"
    assert theirs["accelerator_class"] != "AccelhalDeepSpeedAccelerator"
    assert ours["deepspeed_detected_cpu"] is False  # installed before DeepSpeed's import: its detection never ran
    for key in ("world_size", "backend", "device"):
        assert ours[key] == theirs[key], key
    runs_ours, runs_theirs = ours["runs"], theirs["runs"]
    assert isinstance(runs_ours, dict) and isinstance(runs_theirs, dict)
    assert sorted(runs_ours) == sorted(runs_theirs) == sorted(runs)
    for spec in runs:
        for rank, (a, b) in enumerate(zip(runs_ours[spec], runs_theirs[spec], strict=True)):
            where = f"run {spec}, rank {rank}"
            x = torch.tensor(a["losses"], dtype=torch.float64)
            y = torch.tensor(b["losses"], dtype=torch.float64)
            assert _same(x, y, exact), f"{where}: {x.tolist()} vs DeepSpeed's {y.tolist()}"
            assert x[-1] < x[0], f"{where}: the loss did not go down: {x.tolist()}"
            assert a["checksum"] == (b["checksum"] if exact else pytest.approx(b["checksum"], rel=1e-6)), where
            assert a["partition_numel"] == b["partition_numel"] and a["full_numel"] == b["full_numel"], where
            if "resumed" in a:
                x, y = (torch.tensor(r["resumed"]["reloaded"], dtype=torch.float64) for r in (a, b))
                assert _same(x, y, exact), f"{where}, reloaded: {x.tolist()} vs {y.tolist()}"


def _same(x: Any, y: Any, exact: bool) -> bool:
    import torch

    return bool(torch.equal(x, y) if exact else torch.allclose(x, y, rtol=1e-6, atol=0.0))


def assert_zero3_and_offload(report: dict[str, object], ops_cache: Path) -> None:
    """Stage 3 partitions and gathers; offload runs DeepSpeedCPUAdam from accelhal's cache; checkpoints resume."""
    world_size = report["world_size"]
    assert isinstance(world_size, int)
    runs = report["runs"]
    assert isinstance(runs, dict)
    for spec, ranks in runs.items():
        assert len({r["checksum"] for r in ranks}) == 1, f"run {spec}: ranks gathered different parameters"
        for rank in ranks:
            if "resumed" in rank:
                assert rank["resumed"]["continued"] == rank["resumed"]["reloaded"], (
                    f"run {spec}: the checkpoint differs"
                )
            if spec.startswith("3"):
                assert rank["partition_numel"] == [-(-n // world_size) for n in rank["full_numel"]]
            offload = spec.endswith("+offload")
            assert (rank["cpu_adam"] is not None) == offload, spec
            if offload:
                assert rank["cpu_adam"]["optimizer"] == "DeepSpeedCPUAdam"
                assert Path(rank["cpu_adam"]["op_file"]).is_relative_to(ops_cache)


def gather_defect_runs(report: dict[str, object]) -> set[str]:
    """The ZeRO-3 runs of ``report`` with the signature of DeepSpeed's gather defect (``GLOO_ZERO3_GATHER``).

    That is: a loss or checksum that is not finite, ranks whose gathered parameters differ, or a
    checkpoint that reloads to other losses than the saved engine continued with.
    """
    runs = report["runs"]
    assert isinstance(runs, dict)
    found = set()
    for spec, ranks in runs.items():
        resumed = [rank["resumed"] for rank in ranks if "resumed" in rank]
        values = [v for rank in ranks for v in (*rank["losses"], rank["checksum"])]
        values += [v for r in resumed for v in (*r["continued"], *r["reloaded"])]
        if spec.startswith("3") and (
            not all(math.isfinite(v) for v in values)
            or len({rank["checksum"] for rank in ranks}) > 1
            or any(r["continued"] != r["reloaded"] for r in resumed)
        ):
            found.add(spec)
    return found


def gathers_apart(ours: dict[str, object], theirs: dict[str, object]) -> set[str]:
    """The ZeRO-3 runs whose gathered parameters differ between the two reports, rank by rank.

    The gather defect's quieter signature: each side's ranks agree, every loss is the same to the
    bit, yet one side's last gather read another side's stale values.
    """
    runs_ours, runs_theirs = ours["runs"], theirs["runs"]
    assert isinstance(runs_ours, dict) and isinstance(runs_theirs, dict)
    return {
        spec
        for spec, ranks in runs_ours.items()
        if spec.startswith("3")
        and spec in runs_theirs
        and any(a["checksum"] != b["checksum"] for a, b in zip(ranks, runs_theirs[spec], strict=True))
    }


def without_runs(report: dict[str, object], specs: set[str]) -> dict[str, object]:
    """``report`` without the runs ``specs``."""
    runs = report["runs"]
    assert isinstance(runs, dict)
    return {**report, "runs": {spec: ranks for spec, ranks in runs.items() if spec not in specs}}


def compare(backend: str, world_size: int, extra: tuple[str, ...], ops_cache: Path) -> tuple[dict[str, object], ...]:
    """The same runs through the adapter, then through DeepSpeed's own accelerator for ``backend``.

    DeepSpeed's own run JIT-loads ``cpu_adam`` from the tree accelhal built (see the module's text).
    """
    # LOCAL_SIZE: DeepSpeed 0.15's CPU_Accelerator.device_count() runs numactl without it; both sides get it
    size = {"LOCAL_SIZE": str(world_size)}
    ours = train(
        "accelhal",
        world_size=world_size,
        extra=extra,
        ACCELHAL_ACCELERATOR=backend,
        ACCELHAL_OPS_CACHE=str(ops_cache),
        **size,
    )
    built = {r["cpu_adam"]["op_file"] for ranks in ours["runs"].values() for r in ranks if r["cpu_adam"]}  # type: ignore[attr-defined]
    tree = {"TORCH_EXTENSIONS_DIR": str(Path(built.pop()).parents[1])} if built else {}
    theirs = train("deepspeed", world_size=world_size, extra=extra, DS_ACCELERATOR=backend, **tree, **size)
    print("\n" + side_by_side(ours, theirs))
    return ours, theirs


GPU_GROUPS = (("2", "3"), ("2+offload", "3+offload"))
"""Run separately, so that an op that cannot be built here fails its group only."""


def main(argv: list[str] | None = None) -> int:
    """Compare on ``--backend`` (world size 1) for each dtype and group; print the losses side by side."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--ops-cache", type=Path, default=Path(tempfile.gettempdir()) / "accelhal-deepspeed-ops")
    parser.add_argument("--out", type=Path, help="write every report here (JSON)")
    args = parser.parse_args(argv)
    reports: list[dict[str, object]] = []
    failed = 0
    for dtype in args.dtypes:
        for runs in GPU_GROUPS:
            title = f"{args.backend} {dtype} runs {' '.join(runs)}"
            with tempfile.TemporaryDirectory() as checkpoints:
                extra = ("--runs", *runs, "--steps", str(args.steps), "--dtype", dtype, "--checkpoint", checkpoints)
                try:
                    ours, theirs = compare(args.backend, 1, extra, args.ops_cache)
                    assert_zero3_and_offload(ours, args.ops_cache)
                    assert_same_training(ours, theirs, runs)
                except AssertionError as exc:
                    failed += 1
                    reason = "".join(traceback.format_exception(exc)[-3:])
                    print(f"== {title}: FAILED\n{reason}", flush=True)
                    reports.append({"group": title, "failed": reason})
                    continue
            print(f"== {title}: identical ({theirs['accelerator_class']} vs the adapter)", flush=True)
            reports.append({"group": title, "accelhal": ours, "deepspeed": theirs})
    if args.out is not None:
        args.out.write_text(json.dumps(reports, indent=1))
    print(f"{len(reports) - failed} of {len(reports)} groups identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
