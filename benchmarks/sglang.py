"""SGLang through accelhal's platform against a hand-written platform: decode tokens/s and time to first token.

Run with a Python where SGLang is installed (``/path/to/sglang-venv/bin/python -m benchmarks --suite
sglang``); elsewhere the suite says so and measures nothing. Engine processes (``python -m
benchmarks.sglang engine MODEL``; SGLang chooses the platform in each process it starts) each hold
one ``sglang.Engine`` on the same tiny Llama (``tests/compat/vllm/models.py``, float32, the tests'
engine options: ``tests/compat/sglang/generate.py``):

* ``own``: a minimal hand-written out-of-tree platform for the host, what a vendor writes today
  (:mod:`benchmarks.sglang_vendor`, ``SGLANG_PLATFORM=hand``);
* ``bridge``: accelhal's platform on cpu (``SGLANG_PLATFORM=accelhal``, ``ACCELHAL_ACCELERATOR=cpu``).

The method is the vLLM suite's (:mod:`benchmarks.vllm`): generations of a fresh pair of engines,
their places swapped every generation, each measuring blocks in turn, pinned to the same core, while
the other is stopped (an idle SGLang engine polls; :func:`stopped`); a generation's ratio is the
median of its paired per-block ratios, a target the geometric mean of the generations' ratios with its
Student 95% interval, which must lie within 2%. SGLang runs its
scheduler in a process of its own: an engine's CPU clock is the CPU time of its whole process tree
(the engine, its scheduler and detokenizer, every thread, in nanoseconds), and pinning pins the tree.

After the first generation's blocks, each engine counts the calls into accelhal's code during one
generate of each kind: a general SGLang plugin (:func:`scheduler_probe`, installed in both engines)
runs :class:`benchmarks.adapters.Probe` around the scheduler's ``run_batch`` and
``process_batch_result`` while the engine asks it to.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.method import Method
from benchmarks.results import SuiteResult, Target
from benchmarks.vllm import (
    HEADERS,
    KINDS,
    MARK,
    PROMPT,
    SAME_FACTS,
    START_SECONDS,
    TOKENS,
    Engine,
    _engine_rows,
    _ratio_rows,
    _targets,
    facts,
    results_page,
)

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 1.02
ENGINES: dict[str, dict[str, str]] = {
    "own": {"SGLANG_PLATFORM": "hand", "ACCELHAL_SGLANG_PLATFORM": "off"},
    "bridge": {"SGLANG_PLATFORM": "accelhal", "ACCELHAL_ACCELERATOR": "cpu"},
}
PLATFORMS = {"own": "HandWrittenPlatform", "bridge": "AccelhalCpuPlatform"}
"""The SGLang platform each engine must report."""
BASE_ENV = {"TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", "SGLANG_PLUGINS": ""}
"""Every engine: one torch thread a process (engines measure one at a time, each pinned to one core)."""
GENERATIONS = 32
"""Generations of a full run. Twelve generations' ratios scattered with a standard deviation of 4.1% (time to
first token) and 5.0% (decode), so a 95% interval within the target's 2% takes about 27 of them."""
MIN_GENERATIONS = 3
BLOCKS = 40
PER_BLOCK = 10
"""Generates of each kind in an engine's block. A generate's CPU time (the whole tree's, about 10 ms for the first
token) scatters so that with the vLLM suite's 3 a block and 20 blocks, the paired block ratios of one generation
had an interquartile range of 0.23-0.48, and the generations' medians scattered by about +-7%."""
BUDGET_SECONDS = 6900.0
"""No generation begins once the suite has run this long, after :data:`MIN_GENERATIONS`."""
PROBE_VARIABLE = "BENCH_SGLANG_PROBE"
"""Names the folder through which an engine asks its scheduler to count calls (a file ``on`` there)."""
LABELS = {"own": "a hand-written platform", "bridge": "accelhal's platform on cpu"}
TITLE = "SGLang: decode tokens/s and time to first token, accelhal's platform against a hand-written one"


# -- in the scheduler -------------------------------------------------------------------------------------


def scheduler_probe() -> None:
    """SGLang's general plugin: where :data:`PROBE_VARIABLE` is set, count calls into accelhal while ``on`` exists."""
    folder = os.environ.get(PROBE_VARIABLE)
    if not folder:
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    from benchmarks.adapters import Probe

    switch, counts = Path(folder, "on"), Path(folder, "calls.json")

    def counted(original: Any, *args: Any, **kwargs: Any) -> Any:
        if not switch.exists():
            return original(*args, **kwargs)
        recorder = Probe()
        recorder.on()
        try:
            return original(*args, **kwargs)
        finally:
            recorder.off()
            found = json.loads(counts.read_text()) if counts.exists() else {}
            for call in recorder.calls.values():
                site = f"{call.entry} <- {call.caller}"
                found[site] = found.get(site, 0) + call.count
            counts.write_text(json.dumps(found))

    for method in ("run_batch", "process_batch_result"):
        HookRegistry.register(f"sglang.srt.managers.scheduler.Scheduler.{method}", counted, HookType.AROUND)


# -- the engine process ---------------------------------------------------------------------------------


def _tree() -> list[Any]:
    """This process and every process it started (SGLang's scheduler and detokenizer)."""
    import psutil

    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def _cpu_seconds(tree: list[Any]) -> float:
    """Seconds on the CPU of every thread of every process of ``tree``, to the nanosecond (the scheduler's
    ``/proc/PID/task/TID/schedstat``; ``cpu_times`` counts in clock ticks of 10 ms, as long as a short generate)."""
    total = 0
    for process in tree:
        for task in os.listdir(f"/proc/{process.pid}/task"):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += int(Path(f"/proc/{process.pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e9


def _pin(tree: list[Any], core: int) -> None:
    """Every thread of every process of the engine onto ``core`` alone."""
    for process in tree:
        for task in os.listdir(f"/proc/{process.pid}/task"):
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                os.sched_setaffinity(int(task), {core})


def engine(model: str) -> None:
    """In the engine process: start SGLang's engine, say where it runs, then answer blocks read on stdin."""
    started = time.perf_counter()
    import sglang
    from sglang.srt.platforms import current_platform

    from tests.compat.sglang.generate import ENGINE_OPTIONS

    llm = sglang.Engine(model_path=model, **ENGINE_OPTIONS)
    tree = _tree()
    placed = Path(os.environ["TESTS_SGLANG_PLACEMENT"])
    probe_folder = Path(os.environ[PROBE_VARIABLE])
    devices = [json.loads(line) for line in placed.read_text().splitlines()]
    print(MARK + json.dumps({
        "platform": type(current_platform).__name__, "sglang": sglang.__version__, "devices": devices,
        "start_seconds": time.perf_counter() - started, "facts": facts(),
    }), flush=True)  # fmt: skip

    def generate(tokens: int) -> tuple[float, float, int]:
        params = {"temperature": 0, "max_new_tokens": tokens, "ignore_eos": True}
        wall, cpu = time.perf_counter(), _cpu_seconds(tree)
        output = llm.generate(input_ids=PROMPT, sampling_params=params)
        return time.perf_counter() - wall, _cpu_seconds(tree) - cpu, len(output["output_ids"])

    try:
        for line in sys.stdin:
            request = json.loads(line)
            kinds = {"ttft": 1, "decode": request["tokens"]}
            if "probe" in request:
                answer: dict[str, Any] = {}
                for kind, tokens in kinds.items():
                    (probe_folder / "calls.json").unlink(missing_ok=True)
                    (probe_folder / "on").touch()
                    generate(tokens)
                    (probe_folder / "on").unlink()
                    calls_file = probe_folder / "calls.json"
                    answer[kind] = json.loads(calls_file.read_text()) if calls_file.exists() else {}
                print(MARK + json.dumps(answer), flush=True)
                continue
            if "core" in request:
                _pin(tree, request["core"])
            block: dict[str, dict[str, list[float]]] = {kind: {"wall": [], "cpu": []} for kind in kinds}
            gc.collect()
            gc.disable()
            try:
                for _ in range(request["per_block"]):
                    for kind, tokens in kinds.items():
                        wall, cpu, made = generate(tokens)
                        if made != tokens:
                            raise RuntimeError(f"a generate of max_new_tokens={tokens} gave {made} tokens")
                        block[kind]["wall"].append(wall)
                        block[kind]["cpu"].append(cpu)
            finally:
                gc.enable()
            print(MARK + json.dumps(block), flush=True)
    finally:
        llm.shutdown()


# -- the benchmark's side ---------------------------------------------------------------------------------


def _environment(name: str, sites: list[Path], scratch: Path) -> dict[str, str]:
    """An engine's environment: this one without accelhal's selection variables, plus :data:`ENGINES`' and SGLang's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELHAL_")}
    env.update({**BASE_ENV, **ENGINES[name]})
    probe = scratch / f"probe-{name}"
    probe.mkdir(exist_ok=True)
    env.update({PROBE_VARIABLE: str(probe), "TESTS_SGLANG_PLACEMENT": str(scratch / f"placed-{name}")})
    env["PYTHONPATH"] = os.pathsep.join([*map(str, sites), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _check(ready: dict[str, dict[str, Any]]) -> None:
    """Each engine runs on its platform with weights and KV cache on cpu; the engines agree on :data:`SAME_FACTS`."""
    told = {name: {key: answer["facts"][key] for key in SAME_FACTS} for name, answer in ready.items()}
    if len({json.dumps(value, sort_keys=True) for value in told.values()}) > 1:
        raise RuntimeError(f"the engines differ in more than their platform: {told}")
    for name, answer in ready.items():
        where = {answer["platform"], *(d[part] for d in answer["devices"] for part in ("weights", "kv_cache"))}
        if where != {PLATFORMS[name], "cpu"}:
            raise RuntimeError(f"the {name} engine runs on {sorted(where)}, not {PLATFORMS[name]} on cpu")


@contextlib.contextmanager
def stopped(engines: list[Engine]) -> Iterator[None]:
    """Every process of ``engines`` stopped (``SIGSTOP``) inside the block, continued after it.

    An engine is its process and what it started (SGLang's scheduler and detokenizer), found in
    ``/proc``; each is idle between its blocks, waiting on its input, so none is stopped mid-request.
    """
    from accelhal.process.child_processes import descendants

    trees = [[engine_.process.pid, *descendants(engine_.process.pid)] for engine_ in engines]
    for pid in (pid for tree in trees for pid in tree):
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in (pid for tree in trees for pid in tree):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def generation(names: list[str], model: Path, sites: list[Path], scratch: Path, probe: bool) -> dict[str, Any]:
    """One generation: start both engines, one untimed block each, :data:`BLOCKS` blocks in rotated order, stop.

    Each block runs on one core while the other engine is stopped (:func:`stopped`): an idle SGLang engine
    still polls. Left on the measured core it slowed whichever engine started second (wall-clock time to
    first token 1.55x, 0.57x, 1.46x, ... as the start order swapped); left polling on the other core, the
    generations still scattered by about +-10% (both runs are in ``docs/sglang.md``).
    """
    engines: dict[str, Engine] = {}
    cores = sorted(os.sched_getaffinity(0))
    try:
        for name in names:
            env = _environment(name, sites, scratch)
            engines[name] = Engine(name, model, env, scratch / f"{name}.log", module="benchmarks.sglang")
        ready = {name: engines[name].answer(START_SECONDS) for name in names}
        _check(ready)
        for name in names:
            engines[name].ask(per_block=1, tokens=TOKENS)
        blocks: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for index in range(BLOCKS):
            core = cores[index // len(names) % len(cores)]
            for name in names[index % len(names) :] + names[: index % len(names)]:
                with stopped([engines[other] for other in names if other != name]):
                    answer = engines[name].ask(per_block=PER_BLOCK, tokens=TOKENS, core=core)
                blocks[name].append({**answer, "tokens": TOKENS})
        probed = {name: engines[name].ask(probe=1, tokens=TOKENS) for name in names} if probe else {}
    finally:
        for running in engines.values():
            running.stop()
    return {"ready": ready, "blocks": blocks, "calls": probed, "probe": {}, "order": names}


def generations_for(method: Method) -> int:
    """Generations in a run: :data:`GENERATIONS` at the full repeats, scaled down with them (3 for ``--quick``)."""
    return max(MIN_GENERATIONS, round(GENERATIONS * method.repeats / Method().repeats))


def measure(method: Method, budget: float = BUDGET_SECONDS) -> dict[str, Any]:
    """Generations of ``own`` and ``bridge``, their places swapped every generation."""
    started, load = time.monotonic(), os.getloadavg()[0]
    wanted = generations_for(method)
    with tempfile.TemporaryDirectory(prefix="accelhal-bench-sglang-") as scratch:
        from benchmarks.sglang_vendor import install
        from tests.compat.sglang import placement
        from tests.compat.vllm.models import build

        model = build("llama", Path(scratch))
        plugins = Path(scratch, "site")
        install(plugins)
        placement.install(plugins)
        from tests.compat.engines import install_distribution

        install_distribution(plugins, "probe-sglang", f"[sglang.srt.plugins]\nprobe = {__name__}:scheduler_probe\n")
        done: list[dict[str, Any]] = []
        while len(done) < wanted and (len(done) < MIN_GENERATIONS or time.monotonic() - started < budget):
            index = len(done)
            names = ["own", "bridge"] if index % 2 == 0 else ["bridge", "own"]
            logs = Path(scratch, f"generation-{index}")
            logs.mkdir()
            done.append(generation(names, model, [plugins], logs, probe=index == 0))
    seconds = time.monotonic() - started
    return {"compared": "bridge", "generations": done, "seconds": seconds, "load": [load, os.getloadavg()[0]]}


def _call_rows(data: dict[str, Any]) -> list[list[str]]:
    """Each engine's calls into accelhal per generate of each kind, counted in its scheduler."""
    rows = []
    for name, calls in data["generations"][0]["calls"].items():
        counts = {kind: sum(found.values()) for kind, found in calls.items()}
        sites = sorted({site for found in calls.values() for site in found})
        rows.append([
            f"{LABELS[name]}: calls into accelhal per generate", f"{counts['ttft']:g} / {counts['decode']:g}", "",
            f"max_new_tokens=1 / {TOKENS}, counted by a profiler in SGLang's scheduler"
            + (f": {'; '.join(sites)}" if sites else ""),
        ])  # fmt: skip
    return rows


def summarise(data: dict[str, Any]) -> SuiteResult:
    """The suite's table, its two targets (the bridge on the CPU clock) and raw data, from :func:`measure`."""
    rows = [row for name in LABELS for row in _engine_rows(name, data, LABELS, "the hand-written platform's")]
    rows += _call_rows(data)
    ratio_rows, samples = _ratio_rows(data, "bridge", LABELS)
    rows += ratio_rows
    raw: dict[str, Any] = {"tokens": TOKENS, "per_block": PER_BLOCK, "prompt_tokens": len(PROMPT), **data}
    raw["bridge_ratios"] = {key: sample.values for key, sample in samples.items()}
    targets = _targets(data, "bridge", samples, LABELS, "SGLang")
    calls = {kind: sum(found.values()) for kind, found in data["generations"][0]["calls"].get("bridge", {}).items()}
    for target, (_, _, key) in zip(targets, KINDS, strict=True):
        if key in calls:
            target.note += f"; {calls[key]:g} calls into accelhal per generate"
    return SuiteResult(suite="sglang", title=TITLE, headers=HEADERS, rows=rows, targets=targets, raw=raw)


def skipped() -> str | None:
    """Why this Python cannot run the suite (SGLang is not installed), or ``None``."""
    if importlib.util.find_spec("sglang") is None:
        return f"SGLang is not installed in {sys.executable}: run `python -m benchmarks --suite sglang` with it"
    return None


def run(method: Method) -> SuiteResult:
    """The suite: skipped without SGLang; a failing target naming the error where an engine fails."""
    reason = skipped()
    if reason is not None:
        print(f"sglang suite skipped: {reason}")
        row = ["not measured", "", "", f"{reason}; its figures are in RESULTS-sglang.md"]
        return SuiteResult("sglang", TITLE, HEADERS, [row], raw={"skipped": reason})
    try:
        data = measure(method)
    except RuntimeError as exc:
        last = str(exc).strip().splitlines()[0]
        target = Target("SGLang through accelhal's platform: not measured", math.inf, LIMIT, "x", note=last)
        return SuiteResult("sglang", TITLE, HEADERS, [], [target], raw={"error": str(exc)})
    return summarise(data)


def write_page(result: SuiteResult, env: dict[str, str], method: dict[str, Any], where: Path) -> Path | None:
    """``RESULTS-sglang.md`` in ``where`` from a measured run; ``None`` (nothing written) if skipped or failed."""
    if "generations" not in result.raw:
        return None
    generations = result.raw["generations"]
    settings = {
        "sglang": generations[0]["ready"]["own"]["sglang"],
        "load average (1 min) at start and end": " and ".join(f"{value:.1f}" for value in result.raw["load"]),
        "generations": f"{len(generations)} in {result.raw['seconds']:.0f} s, {BLOCKS} blocks each",
        "generates per block": str(PER_BLOCK),
        "tokens per decode generate": str(TOKENS),
        "engine variables": " ".join(f"{k}={v}" for k, v in BASE_ENV.items()),
    }
    method_words = "`benchmarks/sglang.py` (the vLLM suite's, `benchmarks/vllm.py`, with SGLang's engines)"
    return results_page("sglang", "SGLang", method_words, result, {**env, **settings}, method, where)


if __name__ == "__main__":
    if sys.argv[1:2] == ["engine"]:
        engine(sys.argv[2])
    else:
        sys.exit("usage: python -m benchmarks.sglang engine MODEL")
