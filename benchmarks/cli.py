"""The command line of the suite.

::

    python -m benchmarks                      # every CPU suite; rewrites benchmarks/RESULTS.md
    python -m benchmarks --suite members      # one suite (repeatable)
    VENV/bin/python -m benchmarks --suite vllm  # with vLLM installed: rewrites benchmarks/RESULTS-vllm.md
    VENV/bin/python -m benchmarks --suite sglang  # with SGLang installed: rewrites benchmarks/RESULTS-sglang.md
    python -m benchmarks --quick              # fewer repeats: a smoke run, RESULTS.md untouched
    python3 -m benchmarks --gpu --out "$OUT"  # on the GPU machine: cuda members, loop, graphs, compile, start-up
    python3 -m benchmarks --suite compile     # torch.compile's compiled / eager step on the active backend
    python3 -m benchmarks --gpu --page-from DIR  # RESULTS-gpu.md from the JSON that runs of --suite left in DIR

JSON goes to ``--out`` (default ``benchmarks/results/``, git-ignored). A full CPU run
regenerates ``benchmarks/RESULTS.md`` and ``benchmarks/member-ratios.png``; a ``--gpu``
run writes ``RESULTS-gpu.md`` and ``member-ratios-gpu.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.method import Method
from benchmarks.results import SuiteResult, chart, environment, print_suite, results_markdown, target_table, text_table

HERE = Path(__file__).resolve().parent
CPU_SUITES = ("members", "hot_path", "discovery", "startup", "generic", "deepspeed_ops", "adapters", "vllm", "sglang")
"""In this order: the in-process suites first, then those that spawn processes.

``vllm`` runs only where vLLM is installed (elsewhere it says so) and writes ``RESULTS-vllm.md``; ``sglang`` likewise
with SGLang (``RESULTS-sglang.md``).

``hot_path`` imports DeepSpeed (when installed) into this process, so it runs after
``members``, which must not see DeepSpeed's side effects.
"""
GPU_SUITES = ("gpu", "compile", "hot_path", "discovery", "startup", "adapters")
"""On the GPU machine: the cuda figures, torch.compile's step ratio, the process-level figures on that host too, then
a training step through each framework adapter."""


def _suite(name: str) -> Callable[[Method], SuiteResult]:
    module = importlib.import_module(f"benchmarks.{name}")
    runner: Callable[[Method], SuiteResult] = module.run
    return runner


def main(argv: list[str] | None = None) -> int:
    """Run the chosen suites, print their tables, write JSON (and the results page)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--suite", action="append", choices=sorted({*CPU_SUITES, *GPU_SUITES}), help="run only this suite"
    )
    parser.add_argument("--gpu", action="store_true", help="the GPU part (needs a CUDA device)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats; does not rewrite RESULTS.md")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="where the JSON files go")
    parser.add_argument(
        "--page-from",
        type=Path,
        metavar="DIR",
        help="run nothing: write the results page of --gpu (or of the CPU suites) from DIR's JSON files, "
        "which separate runs of --suite may have written",
    )
    args = parser.parse_args(argv)
    if args.page_from is not None:
        return _page_from(args.page_from, args.suite or list(GPU_SUITES if args.gpu else CPU_SUITES), args.gpu)

    method = Method.quick() if args.quick else Method()
    names = args.suite or list(GPU_SUITES if args.gpu else CPU_SUITES)
    env = environment()
    print("environment: " + "; ".join(f"{k} {v}" for k, v in env.items()))
    results = []
    for name in names:
        started = time.perf_counter()
        result = _suite(name)(method)
        result.raw["suite_seconds"] = time.perf_counter() - started
        print_suite(result)
        results.append(result)

    from benchmarks.results import write_json

    written = write_json(results, env, method.as_dict(), args.out)
    print(f"\nJSON: {', '.join(str(p) for p in written)}")
    targets = [t for r in results for t in r.targets]
    print("\n== Targets")
    print(text_table(*target_table(targets)))
    if not args.quick and (args.gpu or args.suite is None):
        command = "python3 -m benchmarks --gpu --out DIR" if args.gpu else "python -m benchmarks"
        _write_page(results, env, method.as_dict(), args.out if args.gpu else HERE, args.gpu, command)
    for engine in ("vllm", "sglang"):
        if not args.quick and not args.gpu and engine in names:
            write_page = importlib.import_module(f"benchmarks.{engine}").write_page
            write_page(results[names.index(engine)], env, method.as_dict(), HERE)
    return 0 if all(t.passed for t in targets) else 1


def _write_page(
    results: list[SuiteResult], env: dict[str, str], method: dict[str, Any], where: Path, gpu: bool, command: str
) -> None:
    """``RESULTS.md`` (``RESULTS-gpu.md`` for ``gpu``) and the member chart, in ``where``; ``command`` made them."""
    suffix = "-gpu" if gpu else ""
    title = "per-member ratio on " + (env.get("gpu") or env["machine"])
    picture = chart(results, where / f"member-ratios{suffix}.png", title)
    page = results_markdown(results, env, method, picture.name if picture else None, command)
    (where / f"RESULTS{suffix}.md").write_text(page)
    print(f"wrote {where / f'RESULTS{suffix}.md'}" + (f" and {picture}" if picture else ""))


def _page_from(directory: Path, names: list[str], gpu: bool) -> int:
    """The page of the suites ``names`` from their JSON files in ``directory``, written beside them."""
    from benchmarks.results import read_json

    missing = [name for name in names if not (directory / f"{name}.json").is_file()]
    if missing:
        wanted = " ".join(f"--suite {name}" for name in missing)
        print(f"{directory} has no JSON of {', '.join(missing)}: run {wanted} --out {directory} first", file=sys.stderr)
        return 2
    read = [read_json(directory / f"{name}.json") for name in names]
    results = [result for result, _, _ in read]
    _, env, method = read[0]
    gpu_option = " --gpu" if gpu else ""
    command = f"python3 -m benchmarks{gpu_option} --suite NAME --out DIR (each suite) ... --page-from DIR"
    _write_page(results, env, method, directory, gpu, command)
    return 0 if all(t.passed for r in results for t in r.targets) else 1


if __name__ == "__main__":
    sys.exit(main())
