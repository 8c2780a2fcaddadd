"""Start-up: what ``import accelhal`` and the first ``get_accelerator()`` cost a fresh process.

Every figure is a whole fresh interpreter (``python -c ...``) measured by the parent
(CPU time, with wall time beside it), the compared commands interleaved round by round
(see :mod:`benchmarks.method`).

``import accelhal`` is compared with a bare interpreter (``python -c pass``) started in the
same rounds: its absolute time is mostly the interpreter's and the host's (``.pth`` hooks of
site-packages run at every start), so the target is the paired per-round ratio (limit
1.25x), not a number of milliseconds.

The two ratios against ``import torch`` are taken inside the process as well. ``import
torch`` costs 2-4 s of CPU and varies by 10% from one process to the next on the
development and GPU hosts, so the ratio of two separate processes scatters by several
per cent around a cost that is 1% of it. The selecting commands therefore import torch
first and note the process's CPU time at that point (what ``python -c "import torch"``
has cost so far), then select and note it again: the quotient is the command's cost
over ``import torch``'s, both from the same process (``get_accelerator()`` would import
torch anyway; the work is the same). The wall-clock version of the quotient starts at
the command's first line. Both are in the JSON; the targets use the CPU quotient, and the
ratio of the separate processes is in each target's note.

Against DeepSpeed, what each adds beyond ``import torch`` is compared: the in-process
quotient less one, accelhal's over DeepSpeed's, paired by round (limit 0.85). The whole
commands cannot be compared that way on a host where ``import torch`` dominates: there
``import torch`` alone measures 0.90 of DeepSpeed's command, above any limit below it.
"""

from __future__ import annotations

import importlib.util

from benchmarks.method import Comparison, Method, Sample, compare_processes, python
from benchmarks.results import SuiteResult, Target, clock_rows, fmt

SPLIT = """
import time
started = time.perf_counter()
import torch
torch_cpu, torch_wall = time.process_time(), time.perf_counter()
{select}
print("split", time.process_time() / torch_cpu, (time.perf_counter() - started) / (torch_wall - started))
"""
COMMANDS = {
    "python -c pass": "pass",
    "import accelhal": "import accelhal",
    "import torch": "import torch",
    "import accelhal; get_accelerator()": SPLIT.format(select="import accelhal; accelhal.get_accelerator()"),
    "DeepSpeed: from deepspeed.accelerator import get_accelerator; get_accelerator()": SPLIT.format(
        select="from deepspeed.accelerator import get_accelerator; get_accelerator()"
    ),
}
DEEPSPEED = "DeepSpeed: from deepspeed.accelerator import get_accelerator; get_accelerator()"
SELECT = "import accelhal; get_accelerator()"


def run(method: Method) -> SuiteResult:
    """Time every command of :data:`COMMANDS` (DeepSpeed's only when it is installed)."""
    names = [n for n in COMMANDS if n != DEEPSPEED or importlib.util.find_spec("deepspeed") is not None]
    return summarise(compare_processes({n: python(COMMANDS[n]) for n in names}, method))


def summarise(clocks: dict[str, Comparison]) -> SuiteResult:
    """The table (both clocks) and the start-up targets (CPU time)."""
    comparison = clocks["cpu"]
    torch_ms = comparison.samples["import torch"].median
    rows = clock_rows(clocks, lambda ms: fmt(ms / torch_ms, "x"))
    importing, bare = comparison.samples["import accelhal"], comparison.samples["python -c pass"]
    split = clocks["split-cpu"]
    vs_torch = split.samples[SELECT]
    vs_bare = comparison.ratio("import accelhal", "python -c pass")
    targets = [
        Target(
            'python -c "import accelhal" / python -c pass, same rounds',
            vs_bare.median,
            1.25,
            "x",
            vs_bare.iqr,
            note=(
                f"import accelhal {importing.median:.1f} ms, python -c pass alone: {bare.median:.1f} ms; "
                f"the difference, paired: {comparison.difference('import accelhal', 'python -c pass').median:+.1f} ms"
            ),
        ),
        Target(
            '"import accelhal; get_accelerator()" / "import torch"',
            vs_torch.median,
            1.05,
            "x",
            vs_torch.iqr,
            note=f"within each process; separate processes: {comparison.ratio(SELECT, 'import torch').median:.3f}x",
        ),
    ]
    if DEEPSPEED in comparison.samples:
        beyond = Sample([(r[SELECT] - 1) / (r[DEEPSPEED] - 1) for r in split.rounds], "x")
        whole = split.ratio(SELECT, DEEPSPEED)
        floor = 1 / split.samples[DEEPSPEED].median
        targets.append(
            Target(
                "beyond import torch: accelhal's get_accelerator() / DeepSpeed's",
                beyond.median,
                0.85,
                "x",
                beyond.iqr,
                note=(
                    f"what each adds to import torch, in each process: accelhal +{(vs_torch.median - 1) * 100:.1f}%, "
                    f"DeepSpeed +{(split.samples[DEEPSPEED].median - 1) * 100:.1f}%; "
                    f"whole commands: {whole.median:.3f}x "
                    f'(separate processes: {comparison.ratio(SELECT, DEEPSPEED).median:.3f}x), "import torch" alone: '
                    f"{floor:.3f}x, the least any layer over torch could measure that way"
                ),
            )
        )
    return SuiteResult(
        suite="startup",
        title="Start-up: fresh processes (CPU time of the process; wall time beside it)",
        headers=["command", "CPU median", "IQR", "/ import torch", "wall median", "IQR"],
        rows=rows,
        targets=targets,
        raw={clock: {name: sample.summary() for name, sample in c.samples.items()} for clock, c in clocks.items()},
    )
