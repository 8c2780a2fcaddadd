"""What a benchmark returns (:class:`SuiteResult`, :class:`Target`) and how it is shown.

Each suite prints its own table (medians, spread, ratios); the run then writes one JSON
file per suite and, when asked, regenerates ``benchmarks/RESULTS.md`` and the chart of
the per-member ratios.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Target:
    """One figure the issue sets a limit on, and whether it holds."""

    name: str
    measured: float
    limit: float
    unit: str
    spread: float = 0.0
    note: str = ""
    interval: tuple[float, float] | None = None
    """The figure's 95% interval, where it has one."""
    resolution: float | None = None
    """The widest half-interval that still judges the limit (the gap it judges: 0.01 for a 1.01x limit)."""

    @property
    def resolved(self) -> bool:
        """Whether the interval, where there is one and a resolution is asked, is narrower than it."""
        if self.interval is None or self.resolution is None:
            return True
        low, high = self.interval
        return (high - low) / 2 < self.resolution

    @property
    def passed(self) -> bool:
        return self.measured <= self.limit and self.resolved

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        """The target :meth:`as_dict` gave."""
        fields = {k: v for k, v in data.items() if k != "passed"}
        if fields.get("interval") is not None:
            fields["interval"] = tuple(fields["interval"])
        return cls(**fields)


@dataclass
class SuiteResult:
    """A suite's table (printed and saved), its targets and its raw data."""

    suite: str
    title: str
    headers: list[str]
    rows: list[list[str]]
    targets: list[Target] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    member_ratios: dict[str, float] = field(default_factory=dict)
    """For the member suite: ratio per contract member (drawn in the chart)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "title": self.title,
            "headers": self.headers,
            "rows": self.rows,
            "targets": [t.as_dict() for t in self.targets],
            "member_ratios": self.member_ratios,
            "raw": self.raw,
        }


def fmt(value: float, unit: str) -> str:
    """A figure with a sensible number of digits for its unit."""
    if unit == "x":
        return f"{value:.3f}x"
    if unit == "ns":
        return f"{value:.1f} ns" if value < 1000 else f"{value / 1000:.2f} us"
    if unit == "ms":
        return f"{value:.1f} ms"
    if unit == "us":
        return f"{value:.2f} us"
    return f"{value:.4g} {unit}"


def clock_rows(clocks: dict[str, Any], relative: Callable[[float], str]) -> list[list[str]]:
    """Rows of a process suite: name, CPU median and IQR, ``relative(cpu median)``, wall median and IQR."""
    cpu, wall = clocks["cpu"].samples, clocks["wall"].samples
    return [
        [
            name,
            fmt(s.median, "ms"),
            fmt(s.iqr, "ms"),
            relative(s.median),
            fmt(wall[name].median, "ms"),
            fmt(wall[name].iqr, "ms"),
        ]
        for name, s in cpu.items()
    ]


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain fixed-width table for the terminal."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    body = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join([line, "  ".join("-" * w for w in widths), *body])


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def print_suite(result: SuiteResult) -> None:
    """Print a suite's table and its targets."""
    print(f"\n== {result.title}")
    print(text_table(result.headers, result.rows))
    if result.targets:
        print(text_table(*target_table(result.targets)))
    sys.stdout.flush()


def target_table(targets: list[Target]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the target table."""
    headers = ["target", "measured", "spread (IQR)", "limit", "result", "note"]
    rows = [
        [t.name, fmt(t.measured, t.unit), fmt(t.spread, t.unit), f"<= {fmt(t.limit, t.unit)}", _verdict(t), t.note]
        for t in targets
    ]
    return headers, rows


def _verdict(target: Target) -> str:
    if target.passed:
        return "pass"
    return "FAIL" if target.resolved else "FAIL (interval too wide)"


def environment() -> dict[str, str]:
    """Machine, Python and library versions of this run."""
    import torch

    info = {
        "machine": f"{platform.machine()}, {_cpu_name()}, {_cpu_count()} CPUs",
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = str(torch.version.cuda)
    try:
        from importlib.metadata import version

        info["deepspeed"] = version("deepspeed")
    except Exception:
        info["deepspeed"] = "not installed"
    return info


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_json(results: list[SuiteResult], env: dict[str, str], method: dict[str, Any], out: Path) -> list[Path]:
    """One ``<suite>.json`` per suite under ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for result in results:
        path = out / f"{result.suite}.json"
        path.write_text(json.dumps({"environment": env, "method": method, **result.as_dict()}, indent=1))
        paths.append(path)
    return paths


def read_json(path: Path) -> tuple[SuiteResult, dict[str, str], dict[str, Any]]:
    """A suite's result, environment and method from the file :func:`write_json` wrote."""
    data = json.loads(path.read_text())
    targets = [Target.from_dict(t) for t in data["targets"]]
    fields = ("suite", "title", "headers", "rows", "member_ratios", "raw")
    result = SuiteResult(**{k: data[k] for k in fields}, targets=targets)
    return result, data["environment"], data["method"]


def chart(results: list[SuiteResult], path: Path, title: str) -> Path | None:
    """A horizontal bar chart of every member ratio (with the 1.10 limit); None without matplotlib."""
    ratios = {k: v for r in results for k, v in r.member_ratios.items()}
    if not ratios:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install accelhal[bench]); no chart written", file=sys.stderr)
        return None
    names = list(ratios)
    values = [ratios[n] for n in names]
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(names) + 1.2))
    colours = ["tab:green" if v <= 1.10 else "tab:red" for v in values]
    ax.barh(names, values, color=colours)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(1.10, color="tab:red", linestyle="--", linewidth=0.8, label="limit 1.10x")
    ax.invert_yaxis()
    ax.set_xlabel("accelhal member / direct torch expression (median of paired rounds)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def results_markdown(
    results: list[SuiteResult], env: dict[str, str], method: dict[str, Any], chart_name: str | None, command: str
) -> str:
    """The text of ``RESULTS.md``: environment, method, every target, every suite's table."""
    targets = [t for r in results for t in r.targets]
    passed = sum(t.passed for t in targets)
    gpu = "gpu" in env
    parts = [
        "# accelhal benchmark results" + (" (GPU)" if gpu else ""),
        "",
        f"Regenerated by `{command}`; do not edit by hand. Method: `benchmarks/method.py` "
        "(medians of interleaved rounds; ratios are medians of paired per-round ratios; "
        "spread is the inter-quartile range).",
        "",
        "The GPU figures are in `RESULTS-gpu.md` (the suite's `--gpu` part, run on the GPU machine)."
        if not gpu
        else "The CPU figures are in `RESULTS.md`; this page is the `--gpu` part, copied here from `--out`.",
        "",
        markdown_table(["", ""], [[k, v] for k, v in env.items()]),
        "",
        "Method settings: " + ", ".join(f"{k}={v}" for k, v in method.items()),
        "",
        f"## Targets ({passed} of {len(targets)} pass)",
        "",
        markdown_table(*target_table(targets)),
    ]
    if chart_name:
        parts += ["", f"![per-member ratio]({chart_name})"]
    for result in results:
        parts += ["", f"## {result.title}", "", markdown_table(result.headers, result.rows)]
    return "\n".join(parts) + "\n"
