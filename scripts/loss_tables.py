"""What the GPU comparison scripts print: losses side by side, and the verdict (imported by ``gpu-*.py``)."""

from __future__ import annotations


def table(title: str, names: tuple[str, str], theirs: list[float], ours: list[float]) -> float:
    """Print both runs' losses step by step under ``title``; returns the largest absolute difference."""
    print(f"\n{title}\n{'step':>4}  {names[0]:>22}  {names[1]:>22}  {'|diff|':>10}")
    for step, (a, b) in enumerate(zip(theirs, ours, strict=True)):
        print(f"{step:>4}  {a!r:>22}  {b!r:>22}  {abs(a - b):>10.3g}")
    return max(abs(a - b) for a, b in zip(theirs, ours, strict=True))


def verdict(problems: list[str]) -> int:
    """Print each difference and the result line; the exit status (1 when anything differs)."""
    print()
    for problem in problems:
        print("DIFFERS: " + problem)
    print("RESULT: " + ("identical" if not problems else f"{len(problems)} difference(s)"))
    return 1 if problems else 0
