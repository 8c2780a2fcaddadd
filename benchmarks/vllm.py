"""vLLM through accelhal's platform against vLLM's own ``CpuPlatform``: decode tokens/s and time to first token.

Run with a Python where vLLM is installed (``/path/to/vllm-venv/bin/python -m benchmarks --suite
vllm``); elsewhere the suite says so and measures nothing. Engine processes (``python -m
benchmarks.vllm engine MODEL``; the platform is chosen once per process) each hold one
``vllm.LLM`` on the same tiny Llama (``tests/compat/vllm/models.py``: fp32, ``enforce_eager``,
``skip_tokenizer_init``, prefix caching off, the engine core in the process):

* ``own``: vLLM's own ``CpuPlatform`` (no accelhal variable set);
* ``bridge``: accelhal's platform on cpu (``ACCELHAL_VLLM_PLATFORM=on ACCELHAL_ACCELERATOR=cpu``);
* ``testdev``: accelhal's platform on the test tree's PrivateUse1 device, which vLLM has never
  heard of (host memory, CPU fallback for every operator); figures without a target;
* ``again``: vLLM's own ``CpuPlatform`` once more, in place of ``bridge`` in the A/A control
  (``python -m benchmarks.vllm control``), which measures what the method sees between two
  processes that differ in nothing.

Two engine processes of the same platform differ by a few per cent for the whole of their lives
(most likely where their code and data land in memory), and more blocks do not average that
away. So the suite runs **generations**: each starts a fresh ``own`` and ``bridge`` engine
together, their places swapped every generation (the first :data:`TESTDEV_GENERATIONS` with a
``testdev`` engine too), measures :data:`BLOCKS` blocks, and stops them. In a block every engine
measures, one after the other in an order rotated every block, each pinned to the same core (the
cores in turn, each for a whole turn of the orders), with nothing else of the suite running
meanwhile. An engine's block is ``PER_BLOCK`` generates of one prompt with ``max_tokens=1`` (the
time to first token) and as many with ``max_tokens=TOKENS`` (greedy, ``ignore_eos``),
alternated; its figures are the medians: TTFT, and decode tokens/s =
``(TOKENS - 1) / (t(TOKENS) - t(1))``. Each generate is timed on the wall clock and on the process's CPU clock (all its
threads; a core another job holds is not the engine's cost on a shared machine), the garbage
collector paused during a block. A generation's ratio is the median of its paired per-block
ratios: bridge / own for TTFT, own / bridge for tokens/s, so that 1.02 means "2% slower" for
both. Each target is the geometric mean of the generations' ratios on the CPU clock with its
Student 95% interval (:meth:`benchmarks.method.Sample.geometric_mean_ci`), which must be
narrower than the 2% it judges. The wall-clock ratios are in the table.

After the first generation's blocks, each engine runs one generate of each kind under a
profiler (:func:`probe`) that counts every call into accelhal's code, and makes each again to
time what it adds: a figure beside the end-to-end ratio that this host's noise does not blur.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import importlib.util
import json
import math
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from benchmarks.method import Method, Sample
from benchmarks.results import SuiteResult, Target, fmt, markdown_table, target_table

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 1.02
TOKENS = 32
"""Tokens per decode generate."""
PER_BLOCK = 3
"""Generates of each kind per engine per block."""
PROMPT = list(range(1, 41))
"""The prompt's token ids (40 tokens)."""
MARK = "BENCH "
"""The engine's answers to the benchmark start with this on their line (vLLM writes its own lines too)."""
START_SECONDS = 400.0
"""An engine's start-up limit: 20 to 90 s each on two busy cores, three at once."""
ENGINES: dict[str, dict[str, str]] = {
    "own": {},
    "bridge": {"ACCELHAL_VLLM_PLATFORM": "on", "ACCELHAL_ACCELERATOR": "cpu"},
    "testdev": {},
    "again": {},
}
"""Each engine's variables; ``testdev`` has the device's autoload distribution first on its path."""
PLATFORMS = {
    "own": "CpuPlatform",
    "bridge": "AccelhalCpuPlatform",
    "testdev": "AccelhalTestdevPlatform",
    "again": "CpuPlatform",
}
"""The vLLM platform each engine must report."""
DEVICES = {"own": "cpu", "bridge": "cpu", "testdev": "testdev:0", "again": "cpu"}
"""Where each engine's weights and KV cache must be."""
BASE_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_LOGGING_LEVEL": "WARNING",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "OMP_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
"""Every engine: a 1 GiB KV cache, only vLLM's warnings, the engine core in the process (its CPU clock is the
engine's), one thread left unbound (engines run one at a time; on a shared host the scheduler picks the core)."""
GENERATIONS = 20
"""Generations in a full run. Two engine processes of the same platform differ by up to 3.5% (:func:`control`), so
the process, not the block, is the unit: 14 pairs of them left decode's interval at +-1.95%, 20 gave +-1.3%
(Student's interval of their mean) in 11 minutes on two idle cores."""
MIN_GENERATIONS = 3
BLOCKS = 40
"""Blocks per generation: a block's ratio scatters by about 8%, 40 of them put a process's figure within 1.6%."""
TESTDEV_GENERATIONS = 3
"""The first generations also start a ``testdev`` engine (figures without a target)."""
BUDGET_SECONDS = 1200.0
"""No generation begins once the suite has run this long, after :data:`MIN_GENERATIONS`."""
PROBE_ROUNDS = 11
"""Rounds of the replayed calls into accelhal (:func:`probe`), after the blocks."""


# -- the engine process ---------------------------------------------------------------------------------


def _answer(data: dict[str, Any]) -> None:
    print(MARK + json.dumps(data), flush=True)


def _timed(llm: Any, params: Any, prompt: dict[str, Any]) -> tuple[float, float, int]:
    """Wall and CPU seconds of one generate of ``prompt``, and how many tokens it gave."""
    wall, cpu = time.perf_counter(), time.process_time()
    outputs = llm.generate([prompt], params, use_tqdm=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, len(outputs[0].outputs[0].token_ids)


def engine(model: str) -> None:
    """In the engine process: build the ``LLM``, say which platform and device it runs on, then answer blocks.

    Each line on stdin is a block's request ``{"per_block": K, "tokens": N}``; the answer is
    the block's seconds per generate of each kind and clock (``{"ttft": {"wall": [...], "cpu":
    [...]}, "decode": {...}}``). A request with ``"probe": ROUNDS`` answers :func:`probe`'s
    figures instead. End of input ends the process.
    """
    os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")  # LLM.collective_rpc(placement) pickles it
    started = time.perf_counter()
    import vllm
    from vllm import LLM, SamplingParams
    from vllm.platforms import current_platform

    from tests.compat.vllm.generate import placement

    llm = LLM(
        model=model,
        skip_tokenizer_init=True,
        enforce_eager=True,
        dtype="float32",
        max_model_len=160,
        enable_prefix_caching=False,
        seed=0,
    )
    _answer(
        {
            "platform": type(current_platform).__name__,
            "vllm": vllm.__version__,
            "devices": llm.collective_rpc(placement),
            "start_seconds": time.perf_counter() - started,
            "facts": facts(),
        }
    )
    prompt = {"prompt_token_ids": PROMPT}
    for line in sys.stdin:
        request = json.loads(line)
        kinds = {
            "ttft": SamplingParams(temperature=0, max_tokens=1, ignore_eos=True),
            "decode": SamplingParams(temperature=0, max_tokens=request["tokens"], ignore_eos=True),
        }
        if "probe" in request:
            _answer(probe(lambda params: llm.generate([prompt], params, use_tqdm=False), kinds, request))
            continue
        if "core" in request:
            pin(request["core"])
        block: dict[str, dict[str, list[float]]] = {kind: {"wall": [], "cpu": []} for kind in kinds}
        gc.collect()
        gc.disable()
        try:
            for _ in range(request["per_block"]):
                for kind, params in kinds.items():
                    wall, cpu, made = _timed(llm, params, prompt)
                    if made != params.max_tokens:
                        raise RuntimeError(f"a generate of max_tokens={params.max_tokens} gave {made} tokens")
                    block[kind]["wall"].append(wall)
                    block[kind]["cpu"].append(cpu)
        finally:
            gc.enable()
        _answer(block)


SAME_FACTS = ("torch_threads", "interop_threads", "switch_interval", "gc_threshold", "grad_enabled")
"""What every engine of a generation must agree on (:func:`facts`); their modules differ (accelhal's own), and so
may the process's threads by one when it is ready (a helper thread of the engine's that has or has not started:
8 against 9, once in SGLang's fourth generation, the engines otherwise alike)."""


def facts() -> dict[str, Any]:
    """What else could tell two engine processes apart: torch's threads, the process's threads, modules, the GIL."""
    import torch

    return {
        "torch_threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "threads": len(os.listdir("/proc/self/task")),
        "modules": len(sys.modules),
        "switch_interval": sys.getswitchinterval(),
        "gc_threshold": list(gc.get_threshold()),
        "grad_enabled": torch.is_grad_enabled(),
        "affinity": sorted(os.sched_getaffinity(0)),
    }


def pin(core: int) -> None:
    """Every thread of this process onto ``core`` alone."""
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task), {core})


def probe(generate: Callable[[Any], object], kinds: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """Every call into accelhal's code during one generate of each kind, and the CPU time they add to it.

    :class:`benchmarks.adapters.Probe` records the calls (the engine core runs in this thread);
    each is made again against no call at all (:func:`benchmarks.adapters.added_per_step`,
    ``request["probe"]`` rounds of loops of ``request["min_batch_s"]``): the seconds per round
    that accelhal's code adds to a generate.
    """
    from benchmarks.adapters import Probe, added_per_step, replays

    answer: dict[str, Any] = {}
    for kind, params in kinds.items():
        recorder = Probe()
        recorder.on()
        try:
            generate(params)
        finally:
            recorder.off()
        calls = replays(recorder, lambda call: None)
        added, _ = added_per_step(calls, request["probe"], request["min_batch_s"], time.process_time)
        answer[kind] = {"calls": {call.site: call.per_step for call in calls}, "added": added}
    return answer


# -- the benchmark's side ---------------------------------------------------------------------------------


class Engine:
    """One engine process: started with its variables, it answers each block request on its stdout's marked lines."""

    def __init__(self, name: str, model: Path, env: dict[str, str], log: Path, module: str = "benchmarks.vllm") -> None:
        self.name, self.log = name, log
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._tail: collections.deque[str] = collections.deque(maxlen=40)
        with log.open("w") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, "engine", str(model)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                env=env,
                cwd=ROOT,
                start_new_session=True,
            )
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def answer(self, timeout: float) -> dict[str, Any]:
        """The engine's next answer; a :class:`RuntimeError` with its last output if it ends or stays silent."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise self._failure(f"gave no answer within {timeout:g} s") from None
            if line is None:
                raise self._failure(f"ended (exit {self.process.wait()})")
            if line.startswith(MARK):
                answer: dict[str, Any] = json.loads(line[len(MARK) :])
                return answer
            self._tail.append(line)

    def ask(self, **request: Any) -> dict[str, Any]:
        """Send one request (a block, or the probe) and wait for its answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.answer(START_SECONDS)

    def _failure(self, what: str) -> RuntimeError:
        errors = self.log.read_text()[-4000:] if self.log.exists() else ""
        return RuntimeError(f"the {self.name} engine {what}:\n{''.join(self._tail)[-2000:]}{errors}")

    def stop(self) -> None:
        """End the engine: its input closed, then its whole session killed if it lingers."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _environment(name: str, site: Path) -> dict[str, str]:
    """An engine's environment: this one without accelhal's selection variables, plus :data:`ENGINES`' and vLLM's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELHAL_")}
    env.update({**BASE_ENV, **ENGINES[name]})
    paths = [str(site)] if name == "testdev" else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def figures(block: dict[str, Any], clock: str) -> tuple[float, float]:
    """A block's TTFT (s) and decode tokens/s on ``clock``: medians, the decode part ``t(TOKENS) - t(1)``."""
    ttft = statistics.median(block["ttft"][clock])
    decode = statistics.median(block["decode"][clock]) - ttft
    return ttft, (block["tokens"] - 1) / decode if decode > 0 else math.inf


def generations_for(method: Method) -> int:
    """Generations in a run: :data:`GENERATIONS` at the full repeats, scaled down with them (3 for ``--quick``)."""
    return max(MIN_GENERATIONS, round(GENERATIONS * method.repeats / Method().repeats))


def _check_placement(ready: dict[str, dict[str, Any]]) -> None:
    """Each engine runs on the platform and keeps its weights and KV cache on the device :data:`ENGINES` names;
    the engines but ``testdev`` (a device of its own) agree on :data:`SAME_FACTS`."""
    told = {
        name: {key: answer["facts"][key] for key in SAME_FACTS} for name, answer in ready.items() if name != "testdev"
    }
    if len({json.dumps(value, sort_keys=True) for value in told.values()}) > 1:
        raise RuntimeError(f"the engines differ in more than their platform: {told}")
    for name, answer in ready.items():
        where = {answer["platform"], *(d[part] for d in answer["devices"] for part in ("weights", "kv_cache"))}
        if where != {PLATFORMS[name], DEVICES[name]}:
            wanted = f"{PLATFORMS[name]} with its weights and KV cache on {DEVICES[name]}"
            raise RuntimeError(f"the {name} engine runs on {sorted(where)}, not {wanted}")


def generation(names: list[str], model: Path, site: Path, logs: Path, probe_rounds: int = 0) -> dict[str, Any]:
    """One generation: start ``names``' engines together, one untimed block each, :data:`BLOCKS` blocks, stop them.

    ``names`` are ``own`` and the engine compared with it, in either order, and any others:
    the order in which they start, warm up and take their turns. In block ``i`` every
    engine measures in turn, in an order rotated every block, pinned to the same core (the
    benchmark's cores in turn, each for a whole turn of the orders, so that no core is tied to
    an engine's place in the order). With ``probe_rounds`` each engine then answers :func:`probe`.
    The first of two identical engines measured 0.6-2.1% faster in the A/A control, for no
    cause found (not the start order, not the core): :func:`measure` swaps the pair's places
    every generation, so that whatever the place is worth cancels.
    """
    engines: dict[str, Engine] = {}
    cores = sorted(os.sched_getaffinity(0))
    try:
        for name in names:
            engines[name] = Engine(name, model, _environment(name, site), logs / f"{name}.log")
        ready = {name: engines[name].answer(START_SECONDS) for name in names}
        _check_placement(ready)
        for name in names:
            engines[name].ask(per_block=1, tokens=TOKENS)
        blocks: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for index in range(BLOCKS):
            for name in names[index % len(names) :] + names[: index % len(names)]:
                core = cores[index // len(names) % len(cores)]  # each core sees every order
                answer = engines[name].ask(per_block=PER_BLOCK, tokens=TOKENS, core=core)
                blocks[name].append({**answer, "tokens": TOKENS})
        probe_request = {"probe": probe_rounds, "min_batch_s": Method().min_batch_s, "tokens": TOKENS}
        probed = {name: engines[name].ask(**probe_request) for name in names} if probe_rounds else {}
    finally:
        for engine_ in engines.values():
            engine_.stop()
    return {"ready": ready, "blocks": blocks, "probe": probed, "order": names}


def measure(method: Method, compared: str = "bridge", budget: float = BUDGET_SECONDS) -> dict[str, Any]:
    """Generations of ``own`` and ``compared``, their places swapped every generation (the first
    :data:`TESTDEV_GENERATIONS` with ``testdev`` too, last)."""
    started, load = time.monotonic(), os.getloadavg()[0]
    wanted = generations_for(method)
    with tempfile.TemporaryDirectory(prefix="accelhal-bench-vllm-") as scratch:
        from tests.compat.vllm.models import build
        from tests.privateuse1.child import write_autoload_distribution

        model = build("llama", Path(scratch))
        site = Path(scratch, "site")
        write_autoload_distribution(site, "testdev")
        done: list[dict[str, Any]] = []
        while len(done) < wanted and (len(done) < MIN_GENERATIONS or time.monotonic() - started < budget):
            index = len(done)
            pair = ["own", compared] if index % 2 == 0 else [compared, "own"]
            names = [*pair, *(["testdev"] if index < TESTDEV_GENERATIONS and compared == "bridge" else [])]
            logs = Path(scratch, f"generation-{index}")
            logs.mkdir()
            rounds = min(method.repeats, PROBE_ROUNDS) if index == 0 else 0
            done.append(generation(names, model, site, logs, rounds))
    seconds = time.monotonic() - started
    return {"compared": compared, "generations": done, "seconds": seconds, "load": [load, os.getloadavg()[0]]}


LABELS = {
    "own": "vLLM's CpuPlatform",
    "bridge": "accelhal's platform on cpu",
    "testdev": "accelhal's platform on testdev (PrivateUse1)",
    "again": "vLLM's CpuPlatform again (control)",
}
TITLE = "vLLM: decode tokens/s and time to first token, accelhal's platform against vLLM's own CpuPlatform"
HEADERS = ["figure", "median", "IQR / interval", "note"]
KINDS = (("time to first token", "TTFT", "ttft"), ("decode time per token", "decode tokens/s", "decode"))
"""Each figure: its words in the ratio rows, in the targets, and its key in :func:`probe`'s answers."""


def generation_ratio(blocks: dict[str, list[dict[str, Any]]], name: str, kind: str, clock: str) -> float:
    """One generation's ratio of ``name`` to ``own``: the median of its paired per-block ratios.

    TTFT is ``name / own``, tokens/s ``own / name``: 1.02 is "2% slower" for both.
    """
    pairs = [(figures(mine, clock), figures(own, clock)) for mine, own in zip(blocks[name], blocks["own"], strict=True)]
    if kind == "time to first token":
        return statistics.median(m[0] / o[0] for m, o in pairs)
    return statistics.median(o[1] / m[1] for m, o in pairs)


def _ratio_rows(
    data: dict[str, Any], name: str, labels: dict[str, str] = LABELS
) -> tuple[list[list[str]], dict[str, Sample]]:
    """The rows of ``name`` / ``own`` per figure and clock, across the generations that ran ``name``; their samples."""
    rows, samples = [], {}
    runs = [g["blocks"] for g in data["generations"] if name in g["blocks"]]
    for clock in ("cpu", "wall"):
        for kind, _, _ in KINDS:
            sample = Sample([generation_ratio(blocks, name, kind, clock) for blocks in runs], "x")
            samples[f"{kind}, {clock}"] = sample
            if len(sample.values) > 1:
                centre, low, high = sample.geometric_mean_ci()
                shown, interval = fmt(centre, "x"), f"{low:.3f}x-{high:.3f}x"
            else:
                shown, interval = fmt(sample.median, "x"), ""
            each = ", ".join(f"{v:.3f}" for v in sample.values)
            rows.append(
                [
                    f"{labels[name]} / {labels['own']}: {kind}, {clock} clock",
                    shown,
                    interval,
                    f"geometric mean over {len(runs)} generations, 95% interval; each generation's: {each}",
                ]
            )
    return rows, samples


def _engine_rows(
    name: str, data: dict[str, Any], labels: dict[str, str] = LABELS, own: str = "vLLM's own"
) -> list[list[str]]:
    """An engine's TTFT and decode tokens/s on both clocks over all its blocks, and its calls into accelhal."""
    rows = []
    runs = [g for g in data["generations"] if name in g["blocks"]]
    blocks = [b for g in runs for b in g["blocks"][name]]
    starts = statistics.median(g["ready"][name]["start_seconds"] for g in runs)
    for clock in ("cpu", "wall"):
        ttft = Sample([figures(b, clock)[0] * 1e3 for b in blocks], "ms")
        rate = Sample([figures(b, clock)[1] for b in blocks], "tokens/s")
        platform = runs[0]["ready"][name]["platform"]
        note = f"{len(runs)} processes, {len(blocks)} blocks; start-up {starts:.0f} s, on {platform}"
        rows.append(
            [
                f"{labels[name]}: time to first token, {clock} clock",
                fmt(ttft.median, "ms"),
                fmt(ttft.iqr, "ms"),
                note if clock == "cpu" else "",
            ]
        )
        rows.append(
            [f"{labels[name]}: decode, {clock} clock", f"{rate.median:.1f} tokens/s", f"{rate.iqr:.1f} tokens/s", ""]
        )
    probed = _probed(name, data)
    if probed is None:
        return rows
    calls, added = probed
    own_generate = statistics.median(statistics.median(b["decode"]["cpu"]) for b in runs[0]["blocks"]["own"])
    low, high = added["decode"].median_ci()
    rows += [
        [
            f"{labels[name]}: calls into accelhal per generate",
            f"{calls['ttft']:g} / {calls['decode']:g}",
            "",
            f"max_tokens=1 / max_tokens={TOKENS}, counted by a profiler",
        ],
        [
            f"{labels[name]}: CPU time they add per generate",
            f"{fmt(added['ttft'].median * 1e6, 'us')} / {fmt(added['decode'].median * 1e6, 'us')}",
            f"{low * 1e6:.2f}-{high * 1e6:.2f} us",
            f"{added['decode'].median / own_generate:.4%} of {own} generate of {TOKENS}; 95% interval, "
            f"{len(added['decode'].values)} rounds",
        ],
    ]
    return rows


def _probed(name: str, data: dict[str, Any]) -> tuple[dict[str, float], dict[str, Sample]] | None:
    """Calls into accelhal per generate of each kind, and the seconds they add per round (:func:`probe`): the first
    generation's, ``None`` where it did not probe ``name``."""
    probed = data["generations"][0]["probe"].get(name)
    if probed is None:
        return None
    calls = {kind: sum(probed[kind]["calls"].values()) for kind in probed}
    return calls, {kind: Sample(probed[kind]["added"], "s") for kind in probed}


def summarise(data: dict[str, Any]) -> SuiteResult:
    """The suite's table, its two targets (the compared engine on the CPU clock) and raw data, from :func:`measure`."""
    compared = data["compared"]
    names = [name for name in LABELS if any(name in g["blocks"] for g in data["generations"])]
    rows = [row for name in names for row in _engine_rows(name, data)]
    raw: dict[str, Any] = {"tokens": TOKENS, "per_block": PER_BLOCK, "prompt_tokens": len(PROMPT), **data}
    targets = []
    for name in names[1:]:
        ratio_rows, samples = _ratio_rows(data, name)
        rows += ratio_rows
        raw[f"{name}_ratios"] = {key: sample.values for key, sample in samples.items()}
        if name == compared:
            targets = _targets(data, name, samples)
    return SuiteResult(suite="vllm", title=TITLE, headers=HEADERS, rows=rows, targets=targets, raw=raw)


def _targets(
    data: dict[str, Any], name: str, samples: dict[str, Sample], labels: dict[str, str] = LABELS, engine: str = "vLLM"
) -> list[Target]:
    """TTFT and decode of ``name`` against ``own``: each generation's ratio, their geometric mean and interval."""
    probed = _probed(name, data)
    targets = []
    for kind, what, key in KINDS:
        sample, wall = samples[f"{kind}, cpu"], samples[f"{kind}, wall"]
        centre, low, high = sample.geometric_mean_ci()
        calls = ""
        if probed is not None:
            added = probed[1][key].median * 1e6
            calls = f"; {probed[0][key]:g} calls into accelhal per generate, adding {added:.2f} us"
        targets.append(
            Target(
                f"{engine} {what}: {labels[name]} against {labels['own']}",
                centre,
                LIMIT,
                "x",
                sample.iqr,
                f"95% interval {low:.3f}x-{high:.3f}x over {len(sample.values)} generations of fresh engine "
                f"processes, CPU clock; wall clock {wall.geometric_mean_ci()[0]:.3f}x{calls}",
                interval=(low, high),
                resolution=LIMIT - 1,
            )
        )
    return targets


def skipped() -> str | None:
    """Why this Python cannot run the suite (vLLM is not installed), or ``None``."""
    if importlib.util.find_spec("vllm") is None:
        return (
            f"vLLM is not installed in {sys.executable}: run `python -m benchmarks --suite vllm` with a Python with it"
        )
    return None


def run(method: Method) -> SuiteResult:
    """The suite: skipped without vLLM; a failing target naming the error where an engine fails."""
    reason = skipped()
    if reason is not None:
        print(f"vllm suite skipped: {reason}")
        row = ["not measured", "", "", f"{reason}; its figures are in RESULTS-vllm.md"]
        return SuiteResult("vllm", TITLE, HEADERS, [row], raw={"skipped": reason})
    try:
        data = measure(method)
    except RuntimeError as exc:
        last = str(exc).strip().splitlines()[0]
        target = Target("vLLM through accelhal's platform: not measured", math.inf, LIMIT, "x", note=last)
        return SuiteResult("vllm", TITLE, HEADERS, [], [target], raw={"error": str(exc)})
    return summarise(data)


def write_page(result: SuiteResult, env: dict[str, str], method: dict[str, Any], where: Path) -> Path | None:
    """``RESULTS-vllm.md`` in ``where`` from a measured run; ``None`` (nothing written) if skipped or failed."""
    if "generations" not in result.raw:
        return None
    generations = result.raw["generations"]
    load = " and ".join(f"{value:.1f}" for value in result.raw["load"])
    settings = {
        "vllm": generations[0]["ready"]["own"]["vllm"],
        "load average (1 min) at start and end": load,
        "tokens per decode generate": str(TOKENS),
        "generates per block": str(PER_BLOCK),
        "generations": f"{len(generations)} in {result.raw['seconds']:.0f} s (at most "
        f"{generations_for(Method(repeats=method.get('repeats', Method().repeats)))}, none begun after "
        f"{BUDGET_SECONDS:g} s, at least {MIN_GENERATIONS}), {BLOCKS} blocks each",
        "prompt": f"{len(PROMPT)} token ids",
        "engine variables": " ".join(f"{k}={v}" for k, v in BASE_ENV.items()),
    }
    method_words = (
        "`benchmarks/vllm.py` (generations of fresh engine processes on one tiny Llama, each measured in blocks whose "
        "order rotates; a generation's ratio is the median of its paired per-block ratios, a target the geometric mean "
        "of the generations' ratios with its 95% interval)"
    )
    return results_page("vllm", "vLLM", method_words, result, {**env, **settings}, method, where)


def results_page(
    suite: str,
    engine: str,
    method_words: str,
    result: SuiteResult,
    settings: dict[str, str],
    method: dict[str, Any],
    where: Path,
) -> Path:
    """Write ``RESULTS-<suite>.md`` in ``where``: ``settings``, the method's, the targets and the table."""
    passed = sum(t.passed for t in result.targets)
    page = [
        f"# accelhal benchmark results: {engine}",
        "",
        f"Regenerated by `python -m benchmarks --suite {suite}` run with a Python where {engine} is installed; do not "
        f"edit by hand. Method: {method_words}.",
        "",
        markdown_table(["", ""], [[k, v] for k, v in settings.items()]),
        "",
        "Method settings: " + ", ".join(f"{k}={v}" for k, v in method.items()),
        "",
        f"## Targets ({passed} of {len(result.targets)} pass)",
        "",
        markdown_table(*target_table(result.targets)),
        "",
        f"## {result.title}",
        "",
        markdown_table(result.headers, result.rows),
    ]
    path = where / f"RESULTS-{suite}.md"
    path.write_text("\n".join(page) + "\n")
    print(f"wrote {path}")
    return path


def control(generations: int) -> None:
    """The A/A control: the suite's method with vLLM's ``CpuPlatform`` in both engines; its figures printed."""
    method = Method(repeats=math.ceil(generations * Method().repeats / GENERATIONS))
    result = summarise(measure(method, compared="again"))
    for row in result.rows:
        print(" | ".join(row))
    for target in result.targets:
        print(f"{target.name}: {target.measured:.3f}x, {target.note}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["engine"]:
        engine(sys.argv[2])
    elif sys.argv[1:2] == ["control"]:
        control(int(sys.argv[2]) if sys.argv[2:] else GENERATIONS)
    else:
        sys.exit("usage: python -m benchmarks.vllm engine MODEL | control [GENERATIONS]")
