"""A DeepSpeed op that is already built: loading it through accelhal's op cache and through DeepSpeed's JIT load.

The op is DeepSpeed's ``cpu_adam`` (what ZeRO-Offload's ``DeepSpeedCPUAdam`` runs), on the
cpu backend. Compared, interleaved in fresh processes (see :mod:`benchmarks.method`):

* accelhal: ``install("cpu")``, then DeepSpeed's ``CPUAdamBuilder().load()``, which the
  adapter builds into accelhal's keyed op cache: a hit reads the manifest and imports the
  module;
* DeepSpeed: its own CPU accelerator and ``CPUAdamBuilder().load()``, its JIT load finding
  everything built: it computes its compiler flags (a CPU probe in a subprocess), checks
  for ninja and runs it, then imports the module.

Both load the very same file: DeepSpeed's torch extension directory is pointed at the
tree accelhal built (the suite builds it first when the cache has none: minutes, once).
Each child times the ``load()`` call alone, on two clocks: CPU time of the process and
of the subprocesses it waited for (DeepSpeed's ``load()`` spends most of its time in
them), and wall time. The target is the ratio of the CPU figures.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.method import Comparison, Method, compare_processes, python
from benchmarks.results import SuiteResult, Target, clock_rows, fmt

CHILD = """
import resource, time
{install}
from deepspeed.ops.op_builder import CPUAdamBuilder

def cpu():
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime) * 1e3

builder = CPUAdamBuilder()
cpu_before, wall_before = cpu(), time.perf_counter()
module = builder.load()
cpu_after, wall_after = cpu(), time.perf_counter()
print(module.__file__)
print(cpu_after - cpu_before, (wall_after - wall_before) * 1e3)
"""
INSTALL = "from accelhal.compat.deepspeed import install; install('cpu')"
ACCELHAL = "accelhal: CPUAdamBuilder().load(), cache hit"
DEEPSPEED = "DeepSpeed: CPUAdamBuilder().load(), JIT load of a built op"
LIMIT = 0.1
"""accelhal's load at most a tenth of DeepSpeed's."""


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_ACCELERATOR", "DS_ACCELERATOR"))}
    env.update(ACCELHAL_ACCELERATOR="cpu", DS_ACCELERATOR="cpu", **extra)
    return env


def build() -> Path:
    """Build ``cpu_adam`` into accelhal's op cache if it is not there; returns the built module's file."""
    print("deepspeed_ops: loading cpu_adam through accelhal (a first build compiles for minutes)", flush=True)
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(install=INSTALL)],
        env=_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"building DeepSpeed's cpu_adam through accelhal failed:\n{out.stderr[-3000:]}")
    return Path(out.stdout.strip().splitlines()[-2])


def run(method: Method) -> SuiteResult:
    """Time both loads (only when DeepSpeed is installed)."""
    if importlib.util.find_spec("deepspeed") is None:
        return SuiteResult("deepspeed_ops", "DeepSpeed op load: DeepSpeed is not installed", ["command"], [])
    module_file = build()
    env = _environment(TORCH_EXTENSIONS_DIR=str(module_file.parents[1]))
    commands = {ACCELHAL: python(CHILD.format(install=INSTALL)), DEEPSPEED: python(CHILD.format(install=""))}
    clocks = compare_processes(commands, method, env=env, reported=True)
    result = summarise(clocks)
    result.raw["module_file"] = str(module_file)
    return result


def summarise(clocks: dict[str, Comparison]) -> SuiteResult:
    """The table (both clocks) and the target (CPU time, subprocesses included)."""
    cpu, wall = clocks["cpu"], clocks["wall"]
    theirs = cpu.samples[DEEPSPEED].median
    ratio = cpu.ratio(ACCELHAL, DEEPSPEED)
    note = (
        f"accelhal {fmt(cpu.samples[ACCELHAL].median, 'ms')}, DeepSpeed {fmt(theirs, 'ms')} of CPU; "
        f"wall: {fmt(wall.samples[ACCELHAL].median, 'ms')} vs {fmt(wall.samples[DEEPSPEED].median, 'ms')}, "
        f"ratio {wall.ratio(ACCELHAL, DEEPSPEED).median:.4f}x"
    )
    name = "DeepSpeed op already built: accelhal load / DeepSpeed's"
    target = Target(name, ratio.median, LIMIT, "x", ratio.iqr, note)
    return SuiteResult(
        suite="deepspeed_ops",
        title="DeepSpeed op already built: CPUAdamBuilder().load() in a fresh process (CPU incl. subprocesses)",
        headers=["command", "CPU median", "IQR", "/ DeepSpeed's", "wall median", "IQR"],
        rows=clock_rows(clocks, lambda ms: fmt(ms / theirs, "x")),
        targets=[target],
        raw={clock: {name: s.summary() for name, s in c.samples.items()} for clock, c in clocks.items()},
    )
