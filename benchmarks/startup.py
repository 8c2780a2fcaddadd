"""Start-up: what ``import accelhal`` and the first ``get_accelerator()`` cost a fresh process.

Every figure is a whole fresh interpreter (``python -c ...``) measured by the parent
(CPU time, with wall time beside it), the compared commands interleaved round by round
(see :mod:`benchmarks.method`).
"""

from __future__ import annotations

import importlib.util

from benchmarks.method import Comparison, Method, compare_processes, python
from benchmarks.results import SuiteResult, Target, clock_rows, fmt

COMMANDS = {
    "python -c pass": "pass",
    "import accelhal": "import accelhal",
    "import torch": "import torch",
    "import accelhal; get_accelerator()": "import accelhal; accelhal.get_accelerator()",
    "DeepSpeed: from deepspeed.accelerator import get_accelerator; get_accelerator()": (
        "from deepspeed.accelerator import get_accelerator; get_accelerator()"
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
    importing = comparison.samples["import accelhal"]
    vs_torch = comparison.ratio(SELECT, "import torch")
    targets = [
        Target('python -c "import accelhal"', importing.median, 60.0, "ms", importing.iqr),
        Target('"import accelhal; get_accelerator()" / "import torch"', vs_torch.median, 1.05, "x", vs_torch.iqr),
    ]
    if DEEPSPEED in comparison.samples:
        vs_ds = comparison.ratio(SELECT, DEEPSPEED)
        floor = comparison.ratio("import torch", DEEPSPEED).median
        targets.append(
            Target(
                '"import accelhal; get_accelerator()" / DeepSpeed\'s equivalent',
                vs_ds.median,
                0.85,
                "x",
                vs_ds.iqr,
                note=f'"import torch" alone / DeepSpeed\'s: {floor:.3f}x, the least any layer over torch could measure',
            )
        )
    return SuiteResult(
        suite="startup",
        title="Start-up: fresh processes (CPU time of the process; wall time beside it)",
        headers=["command", "CPU median", "IQR", "/ import torch", "wall median", "IQR"],
        rows=rows,
        targets=targets,
        raw={clock: {name: s.summary() for name, s in c.samples.items()} for clock, c in clocks.items()},
    )
