"""The pinned measurement method: how every figure of the suite is taken.

In-process figures (nanoseconds per call)
    Each statement is timed with :class:`timeit.Timer`, its body repeated ``UNROLL``
    times (one per line) so that the timing loop's own cost is negligible, on the
    process's CPU clock (time spent waiting for a core on a shared machine is not the
    statement's cost; the GPU suite uses wall time instead). The loop count is
    calibrated once per statement (smallest power of ten that lasts
    ``min_batch_s``), every statement gets one untimed warm-up batch, then
    ``repeats`` rounds run every compared statement once each, in an order rotated
    every round (interleaved, so drift of the machine hits all of them alike). A
    ratio is the median of the per-round ratios (paired, so drift cancels); its
    spread is their inter-quartile range.

Start-up figures (milliseconds per process)
    Each command runs in a fresh interpreter (``sys.executable``, with
    ``PYTHONDONTWRITEBYTECODE`` removed so that byte-code is cached as for any installed
    package), ``warmup`` times untimed first (file cache, byte-code), then ``repeats``
    rounds that run every compared command once each, rotated as above. Each run is
    taken on two clocks: the process's CPU time (user + system, all threads) and its
    wall time. The targets use CPU time: on an idle machine the two agree for this
    single-threaded work, and on a shared one (this project's CI and development hosts
    run several jobs on two cores) wall time mostly measures waiting for a core. Both are
    in the tables and the JSON. A figure is either the whole process, seen by the parent,
    or the interval a child measures itself and prints as ``"<cpu ms> <wall ms>"``.
"""

from __future__ import annotations

import math
import os
import resource
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

UNROLL = 10
"""How many times a statement is repeated inside one timing-loop iteration."""


@dataclass(frozen=True)
class Method:
    """The knobs of the method; ``quick()`` is for smoke runs, not for the published figures."""

    repeats: int = 51
    warmup: int = 1
    min_batch_s: float = 0.004
    process_repeats: int = 15
    process_warmup: int = 2

    @classmethod
    def quick(cls) -> Method:
        return cls(repeats=11, min_batch_s=0.002, process_repeats=5, process_warmup=1)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "unroll": UNROLL}


@dataclass
class Sample:
    """Repeated measurements of one thing, in ``unit``."""

    values: list[float]
    unit: str

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def iqr(self) -> float:
        """Inter-quartile range (0 with fewer than two values)."""
        if len(self.values) < 2:
            return 0.0
        q = statistics.quantiles(self.values, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def mad(self) -> float:
        """Median absolute deviation from the median."""
        med = self.median
        return statistics.median(abs(v - med) for v in self.values)

    def median_ci(self) -> tuple[float, float]:
        """A distribution-free ~95% confidence interval of the median.

        The order statistics of ranks ``n/2 - 0.98 sqrt(n)`` and ``1 + n/2 + 0.98 sqrt(n)``
        (the normal approximation to the binomial; clamped to the sample).

        >>> Sample([float(v) for v in range(1, 101)], "x").median_ci()
        (40.0, 61.0)
        """
        ordered = sorted(self.values)
        n = len(ordered)
        half_width = 0.98 * math.sqrt(n)
        low_rank = max(1, math.floor(n / 2 - half_width))
        high_rank = min(n, math.ceil(1 + n / 2 + half_width))
        return ordered[low_rank - 1], ordered[high_rank - 1]

    def geometric_mean_ci(self) -> tuple[float, float, float]:
        """The geometric mean of positive values (ratios) and its Student 95% interval.

        For a few independent units, each already a robust figure (an engine process's median
        ratio): the mean of the logarithms with ``t(0.975, n - 1)`` standard errors either
        side, mapped back. Needs two values or more.

        >>> [round(v, 4) for v in Sample([0.98, 1.0, 1.02, 1.04], "x").geometric_mean_ci()]
        [1.0098, 0.9695, 1.0517]
        """
        logs = [math.log(v) for v in self.values]
        centre = statistics.fmean(logs)
        half_width = student_t_975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        return math.exp(centre), math.exp(centre - half_width), math.exp(centre + half_width)

    def summary(self) -> dict[str, Any]:
        low, high = self.median_ci()
        return {
            "median": self.median,
            "median_ci95": [low, high],
            "iqr": self.iqr,
            "mad": self.mad,
            "unit": self.unit,
            "values": self.values,
        }


STUDENT_T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
"""Student's t, 97.5th percentile, for 1 to 30 degrees of freedom."""


def student_t_975(df: int) -> float:
    """Student's t at 0.975 for ``df`` degrees of freedom: :data:`STUDENT_T_975`, beyond 30 its first-order expansion.

    >>> student_t_975(13), round(student_t_975(60), 3)
    (2.16, 2.0)
    """
    if df < 1:
        raise ValueError(f"Student's t needs 1 degree of freedom or more, got {df}")
    if df <= len(STUDENT_T_975):
        return STUDENT_T_975[df - 1]
    z = statistics.NormalDist().inv_cdf(0.975)
    return z + (z**3 + z) / (4 * df)


@dataclass
class Comparison:
    """Interleaved samples of several candidates, and paired ratios between them."""

    samples: dict[str, Sample]
    rounds: list[dict[str, float]] = field(default_factory=list)

    def ratio(self, numerator: str, denominator: str) -> Sample:
        """Per-round ``numerator / denominator``; its median is the reported ratio."""
        return Sample([r[numerator] / r[denominator] for r in self.rounds], "x")

    def difference(self, minuend: str, subtrahend: str) -> Sample:
        """Per-round ``minuend - subtrahend``, in the samples' unit (paired, like :meth:`ratio`)."""
        return Sample([r[minuend] - r[subtrahend] for r in self.rounds], self.samples[minuend].unit)


def _rotated(names: Sequence[str], round_index: int) -> list[str]:
    k = round_index % len(names)
    return [*names[k:], *names[:k]]


def _calibrate(timer: timeit.Timer, min_batch_s: float) -> int:
    loops = 1
    while True:
        if timer.timeit(loops) >= min_batch_s:
            return loops
        loops *= 10


def compare_statements(
    statements: Mapping[str, str],
    namespace: dict[str, Any],
    method: Method,
    setup: str = "pass",
    clock: Callable[[], float] = time.process_time,
) -> Comparison:
    """Time each statement (ns per execution of the statement), interleaved round by round.

    The default clock is the process's CPU time: on a shared machine, time spent waiting
    for a core is not the statement's cost. Pass ``time.perf_counter`` where the device
    works asynchronously and wall time is what matters.
    """
    timers = {
        name: timeit.Timer("\n".join([stmt] * UNROLL), setup=setup, timer=clock, globals=namespace)
        for name, stmt in statements.items()
    }
    loops = {name: _calibrate(timer, method.min_batch_s) for name, timer in timers.items()}
    for _ in range(method.warmup):
        for name, timer in timers.items():
            timer.timeit(loops[name])
    names = list(statements)
    result = Comparison({name: Sample([], "ns") for name in names})
    for i in range(method.repeats):
        row: dict[str, float] = {}
        for name in _rotated(names, i):
            row[name] = timers[name].timeit(loops[name]) / loops[name] / UNROLL * 1e9
            result.samples[name].values.append(row[name])
        result.rounds.append(row)
    return result


CLOCKS = ("cpu", "wall")
"""Start-up figures are taken on both clocks; targets use ``cpu`` (see the module docstring)."""


SPLIT_PREFIX = "split "
"""A child may print a last line ``"split <cpu> <wall>"``: figures it measured itself
(see :data:`SPLIT_CLOCKS`), kept beside the parent's whole-process clocks."""
SPLIT_CLOCKS = ("split-cpu", "split-wall")


def _run_child(argv: Sequence[str], env: Mapping[str, str], reported: bool) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(list(argv), env=dict(env), capture_output=True, text=True, check=False)
    wall_ms = (time.perf_counter() - started) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)!r} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    last = (out.stdout.strip().splitlines() or [""])[-1]
    if reported:
        return dict(zip(CLOCKS, (float(v) for v in last.split()), strict=True))
    cpu_ms = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    figures = dict(zip(CLOCKS, (cpu_ms, wall_ms), strict=True))
    if last.startswith(SPLIT_PREFIX):
        figures.update(zip(SPLIT_CLOCKS, (float(v) for v in last.removeprefix(SPLIT_PREFIX).split()), strict=True))
    return figures


def compare_processes(
    commands: Mapping[str, Sequence[str]],
    method: Method,
    env: Mapping[str, str] | None = None,
    reported: bool = False,
) -> dict[str, Comparison]:
    """Run each command in fresh processes, interleaved; figures in ms, per clock of :data:`CLOCKS`.

    With ``reported=True`` the figures are the two floats the child prints on its last
    line (``"<cpu ms> <wall ms>"``, measured by itself); otherwise the process's CPU time
    (user + system, from the parent's ``getrusage``) and its wall time seen by the parent,
    plus, for the commands that print a ``"split <cpu> <wall>"`` line, those two figures
    under :data:`SPLIT_CLOCKS` (unit ``x``: they are ratios the child computed).
    """
    environment = dict(os.environ if env is None else env)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # measure as installed code runs: byte-code cached
    names = list(commands)
    for _ in range(method.process_warmup):
        for name in names:
            _run_child(commands[name], environment, reported)
    results: dict[str, Comparison] = {}
    for i in range(method.process_repeats):
        rows: dict[str, dict[str, float]] = {}
        for name in _rotated(names, i):
            for clock, value in _run_child(commands[name], environment, reported).items():
                unit = "x" if clock in SPLIT_CLOCKS else "ms"
                comparison = results.setdefault(clock, Comparison({}))
                comparison.samples.setdefault(name, Sample([], unit)).values.append(value)
                rows.setdefault(clock, {})[name] = value
        for clock, row in rows.items():
            results[clock].rounds.append(row)
    return {
        clock: Comparison(
            {n: results[clock].samples[n] for n in names if n in results[clock].samples}, results[clock].rounds
        )
        for clock in results
    }


def python(code: str) -> list[str]:
    """``[sys.executable, "-c", code]``: a fresh interpreter of the running Python."""
    return [sys.executable, "-c", code]
