"""The benchmark harness itself: the method measures what it says, the baselines are equivalent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import accelhal
from benchmarks import members
from benchmarks.method import Method, Sample, compare_processes, compare_statements
from benchmarks.results import SuiteResult, Target, chart, results_markdown

TINY = Method(repeats=3, warmup=1, min_batch_s=0.0005, process_repeats=2, process_warmup=1)


def test_interleaved_rounds_pair_every_statement_and_see_a_slower_one() -> None:
    comparison = compare_statements({"slow": "sum(range(2000))", "fast": "len(())"}, {}, TINY)
    assert [sorted(r) for r in comparison.rounds] == [["fast", "slow"]] * TINY.repeats
    ratio = comparison.ratio("slow", "fast")
    assert ratio.values == [r["slow"] / r["fast"] for r in comparison.rounds]
    assert ratio.median > 10


def test_sample_spread_is_zero_only_without_variation() -> None:
    assert Sample([3.0, 3.0, 3.0], "ms").iqr == 0 and Sample([3.0, 3.0, 3.0], "ms").mad == 0
    varied = Sample([1.0, 2.0, 3.0, 4.0, 100.0], "ms")
    assert varied.iqr > 0 and varied.mad > 0 and varied.median == 3.0


def test_median_interval_covers_the_median_and_narrows_with_more_samples() -> None:
    import random

    rng = random.Random(7)
    small = Sample([rng.gauss(1.0, 0.05) for _ in range(51)], "x")
    large = Sample([rng.gauss(1.0, 0.05) for _ in range(816)], "x")
    for sample in (small, large):
        low, high = sample.median_ci()
        assert low <= sample.median <= high
    assert (large.median_ci()[1] - large.median_ci()[0]) < (small.median_ci()[1] - small.median_ci()[0]) / 2
    assert Sample([float(v) for v in range(1, 101)], "x").median_ci() == (40.0, 61.0)
    assert Sample([2.0], "x").median_ci() == (2.0, 2.0)
    assert small.summary()["median_ci95"] == list(small.median_ci())


def test_students_t_table_agrees_with_its_expansion_and_the_normal_limit() -> None:
    """The typed table against t's Cornish-Fisher expansion (three terms: within 0.01 from 4 degrees of freedom)."""
    import math
    import statistics

    from benchmarks.method import student_t_975

    z = statistics.NormalDist().inv_cdf(0.975)
    for df in range(4, 31):
        expansion = (
            z
            + (z**3 + z) / (4 * df)
            + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
        )
        assert math.isclose(student_t_975(df), expansion, abs_tol=0.01), df
    assert student_t_975(1) == 12.706 and 1.96 < student_t_975(1000) < 1.963
    with pytest.raises(ValueError, match="1 degree of freedom or more"):
        student_t_975(0)


def test_geometric_mean_interval_is_symmetric_in_logs_and_narrows_with_more_units() -> None:
    import math

    few = Sample([0.95, 1.05, 1.0, 0.98], "x")
    centre, low, high = few.geometric_mean_ci()
    assert math.isclose(centre, math.prod(few.values) ** 0.25)
    assert math.isclose(math.log(centre) - math.log(low), math.log(high) - math.log(centre))
    _, more_low, more_high = Sample(few.values * 5, "x").geometric_mean_ci()
    assert low < more_low < centre < more_high < high


def test_process_figures_come_on_both_clocks_from_fresh_interpreters() -> None:
    """The CPU clock is the child's own CPU time: three million additions outweigh an empty run."""
    busy = "x = 0\nfor i in range(3_000_000): x += i"
    clocks = compare_processes({"idle": [sys.executable, "-c", "pass"], "busy": [sys.executable, "-c", busy]}, TINY)
    for clock in ("cpu", "wall"):
        assert len(clocks[clock].rounds) == TINY.process_repeats
        assert all(v > 0 for sample in clocks[clock].samples.values() for v in sample.values)
    assert clocks["cpu"].samples["busy"].median > clocks["cpu"].samples["idle"].median


def test_reported_process_figures_are_exactly_what_each_child_printed() -> None:
    """With ``reported=True`` the harness takes the child's last line, per clock and per round."""
    commands = {
        "a": [sys.executable, "-c", "print('noise'); print('1.5 2.5')"],
        "b": [sys.executable, "-c", "print('3.0 4.0')"],
    }
    clocks = compare_processes(commands, TINY, reported=True)
    assert clocks["cpu"].samples["a"].values == [1.5] * TINY.process_repeats
    assert clocks["wall"].samples["a"].values == [2.5] * TINY.process_repeats
    assert clocks["cpu"].ratio("b", "a").values == [2.0] * TINY.process_repeats


def test_split_figures_a_child_prints_sit_beside_the_parents_clocks() -> None:
    """A ``split <cpu> <wall>`` last line adds two clocks for that command only, paired per round."""
    commands = {
        "split": [sys.executable, "-c", "print('split 1.25 1.5')"],
        "other": [sys.executable, "-c", "print('split 1.0 2.0')"],
        "plain": [sys.executable, "-c", "pass"],
    }
    clocks = compare_processes(commands, TINY)
    assert set(clocks) == {"cpu", "wall", "split-cpu", "split-wall"}
    assert set(clocks["cpu"].samples) == {"split", "other", "plain"}
    assert set(clocks["split-cpu"].samples) == {"split", "other"}
    assert clocks["split-cpu"].samples["split"].values == [1.25] * TINY.process_repeats
    assert clocks["split-wall"].samples["other"].unit == "x"
    assert clocks["split-cpu"].ratio("split", "other").values == [1.25] * TINY.process_repeats


def test_startup_targets_use_the_in_process_quotient_and_note_the_separate_processes() -> None:
    from benchmarks import startup
    from benchmarks.method import Comparison

    names = list(startup.COMMANDS)
    whole = {"python -c pass": 30.0, "import accelhal": 31.0, "import torch": 2000.0, startup.SELECT: 2100.0}
    whole[startup.DEEPSPEED] = 2500.0
    split = {startup.SELECT: 1.01, startup.DEEPSPEED: 1.25}

    def comparison(figures: dict[str, float], unit: str) -> Comparison:
        return Comparison({n: Sample([v, v], unit) for n, v in figures.items()}, [dict(figures), dict(figures)])

    clocks = {"cpu": comparison(whole, "ms"), "wall": comparison(whole, "ms"), "split-cpu": comparison(split, "x")}
    targets = {t.name: t for t in startup.summarise(clocks).targets}
    assert sorted(names) == sorted(whole)
    vs_torch = targets['"import accelhal; get_accelerator()" / "import torch"']
    assert vs_torch.measured == 1.01 and vs_torch.passed and "separate processes: 1.050x" in vs_torch.note
    vs_ds = targets["beyond import torch: accelhal's get_accelerator() / DeepSpeed's"]
    assert vs_ds.measured == pytest.approx(0.01 / 0.25) and vs_ds.passed
    assert "accelhal +1.0%, DeepSpeed +25.0%" in vs_ds.note and "0.800x, the least" in vs_ds.note
    vs_bare = targets['python -c "import accelhal" / python -c pass, same rounds']
    assert vs_bare.measured == pytest.approx(31.0 / 30.0) and vs_bare.passed
    assert "python -c pass alone: 30.0 ms" in vs_bare.note


def test_every_member_statement_and_its_baseline_run_on_cpu() -> None:
    acc = accelhal.get_accelerator()
    ns = members.namespace(acc)
    assert len(members.PAIRS) == 20
    assert [p.uses for p in members.PAIRS] == sorted((p.uses for p in members.PAIRS), reverse=True)
    for pair in members.PAIRS:
        for statement in (pair.statement("cpu"), pair.direct["cpu"]):
            exec(statement, ns)


@pytest.mark.parametrize("pair", [p for p in members.PAIRS if p.kind["cpu"] == "floor" and "with" not in p.accelhal])
def test_a_floor_baseline_answers_what_the_member_answers(pair: members.Pair) -> None:
    ns = members.namespace(accelhal.get_accelerator())
    ours: Any = eval(pair.statement("cpu"), ns)
    floor: Any = eval(pair.direct["cpu"], ns)
    assert ours is floor or ours == floor


def test_results_page_lists_every_target_with_its_verdict(tmp_path: Path) -> None:
    targets = [Target("fast enough", 0.9, 1.1, "x"), Target("too slow", 30.0, 20.0, "ms")]
    result = SuiteResult("demo", "Demo", ["member", "ratio"], [["a", "0.9x"]], targets, member_ratios={"a": 0.9})
    page = results_markdown([result], {"python": "3"}, {"repeats": 1}, None, "python -m benchmarks")
    assert "| fast enough | 0.900x |" in page and "| pass |" in page
    assert "| too slow | 30.0 ms |" in page and "| FAIL |" in page
    assert "(1 of 2 pass)" in page
    pytest.importorskip("matplotlib")
    picture = chart([result], tmp_path / "ratios.png", "demo")
    assert picture is not None and picture.read_bytes().startswith(b"\x89PNG")


def test_page_from_joins_the_json_of_separate_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--page-from``: two runs' JSON (written as ``--suite`` runs write it) make one page, in the suites' order."""
    from benchmarks.cli import main
    from benchmarks.results import write_json

    env = {"machine": "x86_64", "gpu": "Demo GPU"}
    first = SuiteResult("discovery", "Discovery", ["row"], [["a"]], [Target("first call", 9.8, 10.0, "ms")])
    second = SuiteResult("startup", "Start-up", ["row"], [["b"]], [Target("import", 1.3, 1.25, "x")])
    write_json([second], env, {"repeats": 51}, tmp_path)
    write_json([first], env, {"repeats": 51}, tmp_path)
    status = main(["--gpu", "--suite", "discovery", "--suite", "startup", "--page-from", str(tmp_path)])
    page = (tmp_path / "RESULTS-gpu.md").read_text()
    assert status == 1  # one target fails
    assert "| first call | 9.8 ms |" in page and "| import | 1.300x |" in page and "(1 of 2 pass)" in page
    assert page.index("## Discovery") < page.index("## Start-up") and "--page-from DIR" in page
    assert main(["--gpu", "--suite", "gpu", "--page-from", str(tmp_path)]) == 2  # a suite that never ran
    assert "has no JSON of gpu: run --suite gpu --out" in capsys.readouterr().err


def test_adapter_blocks_alternate_in_rotated_rounds_after_an_untimed_warm_up() -> None:
    from benchmarks.adapters import alternate

    calls: list[str] = []

    def block(name: str, seconds: float) -> Any:
        def run() -> float:
            calls.append(name)
            return seconds

        return run

    samples = alternate({"own": block("own", 1.0), "accelhal": block("accelhal", 2.0)}, rounds=3)
    assert calls == ["own", "accelhal", "own", "accelhal", "accelhal", "own", "own", "accelhal"]
    assert samples["own"].values == [1.0] * 3 and samples["accelhal"].values == [2.0] * 3


def test_the_probe_counts_each_entry_into_accelhal_once_per_call_with_what_replays_it() -> None:
    """Calls made inside accelhal's code are part of the entry that made them; a replay answers as the call did."""
    from benchmarks.adapters import Probe, replays

    acc = accelhal.get_accelerator()
    probe = Probe()
    for _ in range(2):
        probe.on()
        accelhal.get_accelerator().device_name(0)  # the indexed name calls accelhal's code beneath it
        sorted(range(3))
        probe.off()
    calls = replays(probe, lambda call: None)
    assert probe.steps == 2 and [c.per_step for c in calls] == [1.0, 1.0]
    assert [c.own for c in calls] == [None, None]
    assert "get_accelerator <- test_benchmarks.py:" in calls[0].site
    assert calls[0].ours() is acc and calls[1].ours() == acc.device_name(0)


def test_added_time_is_the_calls_per_step_times_each_calls_cost_over_its_counterpart() -> None:
    import time

    from benchmarks.adapters import Replay, added_per_step

    def slow() -> int:
        return sum(range(300))

    same = Replay("same", slow, slow, "same <- here", per_step=2.0)
    assert added_per_step([], 3, 0.0005, time.process_time) == ([0.0] * 3, [{}] * 3)
    added, costs = added_per_step(
        [Replay("slow", slow, None, "slow <- here", per_step=5.0), same], 2, 0.0005, time.process_time
    )
    assert len(added) == 2 and all(a > 0 for a in added)
    for seconds, row in zip(added, costs, strict=True):
        expected = 5 * (row["slow <- here ours"] - row["slow <- here own"]) + 2 * (
            row["same <- here ours"] - row["same <- here own"]
        )
        assert seconds == pytest.approx(expected)
        assert row["slow <- here ours"] > 3 * row["slow <- here own"]


def test_a_target_whose_interval_is_wider_than_its_resolution_fails_as_unresolved(tmp_path: Path) -> None:
    from benchmarks.results import read_json, write_json

    resolved = Target("resolved", 1.004, 1.01, "x", interval=(1.003, 1.005), resolution=0.01)
    unresolved = Target("unresolved", 1.001, 1.01, "x", interval=(0.97, 1.03), resolution=0.01)
    assert resolved.passed and not unresolved.passed and not unresolved.resolved
    page = results_markdown([SuiteResult("demo", "Demo", ["a"], [["b"]], [resolved, unresolved])], {}, {}, None, "x")
    assert "| resolved | 1.004x |" in page and "| FAIL (interval too wide) |" in page
    write_json([SuiteResult("demo", "Demo", ["a"], [["b"]], [resolved, unresolved])], {}, {}, tmp_path)
    assert read_json(tmp_path / "demo.json")[0].targets == [resolved, unresolved]


def _vllm_block(ttft: float, decode: float) -> dict[str, Any]:
    """A block as an engine answers it, with the same seconds on both clocks."""
    from benchmarks import vllm

    kinds = {"ttft": [ttft] * vllm.PER_BLOCK, "decode": [decode] * vllm.PER_BLOCK}
    return {"tokens": vllm.TOKENS, **{k: {"wall": v, "cpu": v} for k, v in kinds.items()}}


def _vllm_generation(slower: float, probe: bool) -> dict[str, Any]:
    """One generation as :func:`benchmarks.vllm.generation` returns it: own, bridge ``slower`` on both figures, and
    testdev as fast as own."""
    from benchmarks import vllm

    own = [_vllm_block(0.010, 0.010 + 0.001 * (vllm.TOKENS - 1) * f) for f in (1.0, 2.0, 1.0)]
    bridge = [_vllm_block(0.010 * slower, 0.010 * slower + 0.001 * (vllm.TOKENS - 1) * f * slower) for f in (1, 2, 1)]
    names = ("own", "bridge", "testdev")
    ready = {name: {"platform": vllm.PLATFORMS[name], "vllm": "0.32.0", "start_seconds": 30.0} for name in names}
    probed = {"calls": {"sync <- step": 2.0}, "added": [1e-6, 2e-6, 3e-6]}
    return {
        "ready": ready,
        "blocks": {"own": own, "bridge": bridge, "testdev": own},
        "probe": {name: {"ttft": probed, "decode": probed} for name in names} if probe else {},
    }


def test_vllm_targets_are_the_generations_geometric_mean_with_its_interval(tmp_path: Path) -> None:
    """Each generation's ratio is its blocks' median; a target their geometric mean, judged with its interval."""
    from benchmarks import vllm

    slower = (1.25, 1.10, 1.15)
    generations = [_vllm_generation(f, probe=i == 0) for i, f in enumerate(slower)]
    data = {"compared": "bridge", "generations": generations, "seconds": 100.0, "load": [1.0, 2.0]}
    result = vllm.summarise(data)
    assert vllm.figures(generations[0]["blocks"]["own"][1], "cpu") == pytest.approx((0.010, 500.0))
    ttft, rate = result.targets
    mean = (1.25 * 1.10 * 1.15) ** (1 / 3)
    assert ttft.measured == pytest.approx(mean) and rate.measured == pytest.approx(mean)
    low, high = rate.interval or (0.0, 0.0)
    assert low < 1.10 and high > 1.25 and rate.limit == 1.02 and not rate.passed
    assert "each generation's: 1.250, 1.100, 1.150" in " ".join(r[3] for r in result.rows)
    testdev = {row[0]: row[1] for row in result.rows if row[0].startswith(vllm.LABELS["testdev"] + " /")}
    assert len(testdev) == 4 and set(testdev.values()) == {"1.000x"}  # four figures, no target
    page = vllm.write_page(result, {"python": "3"}, {"repeats": 51}, tmp_path)
    assert page is not None and "## Targets (0 of 2 pass)" in page.read_text()
    assert "| vllm | 0.32.0 |" in page.read_text() and "| generations | 3 in 100 s (at most 20" in page.read_text()
    assert "2 calls into accelhal per generate, adding 2.00 us" in ttft.note


def test_vllm_target_passes_only_when_its_interval_resolves_two_per_cent() -> None:
    from benchmarks import vllm

    close = [_vllm_generation(f, probe=False) for f in (1.001, 1.004, 0.999, 1.002)]
    wide = [_vllm_generation(f, probe=False) for f in (0.96, 1.04, 0.97, 1.05)]
    for generations, passed in ((close, True), (wide, False)):
        data = {"compared": "bridge", "generations": generations, "seconds": 1.0, "load": [0.0, 0.0]}
        targets = vllm.summarise(data).targets
        assert [t.passed for t in targets] == [passed, passed], [t.interval for t in targets]
        assert all(t.measured <= 1.02 for t in targets)


def test_vllm_suite_says_it_is_skipped_where_vllm_is_not_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The main environment's ``python -m benchmarks`` still runs; no results page is written."""
    import importlib.util

    from benchmarks import vllm
    from benchmarks.cli import main

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here: the suite would run")
    assert main(["--suite", "vllm", "--quick", "--out", str(tmp_path)]) == 0
    assert f"vllm suite skipped: vLLM is not installed in {sys.executable}" in capsys.readouterr().out
    result = vllm.run(TINY)
    assert result.targets == [] and vllm.write_page(result, {}, {}, tmp_path) is None
    assert not list(tmp_path.glob("RESULTS*"))


def test_sglang_targets_are_the_vllm_methods_over_its_own_engines(tmp_path: Path) -> None:
    """The SGLang suite judges the bridge against the hand-written platform as the vLLM suite does; its page names
    SGLang's release and its table the calls counted in the scheduler."""
    from benchmarks import sglang

    generations = [_vllm_generation(f, probe=False) for f in (1.25, 1.10, 1.15)]
    for generation in generations:
        generation["ready"] = {
            name: {"platform": sglang.PLATFORMS[name], "sglang": "0.5.23", "start_seconds": 60.0}
            for name in ("own", "bridge")
        }
        del generation["blocks"]["testdev"]
        generation["calls"] = {}
    generations[0]["calls"] = {name: {"ttft": {}, "decode": {}} for name in ("own", "bridge")}
    data = {"compared": "bridge", "generations": generations, "seconds": 100.0, "load": [1.0, 2.0]}
    result = sglang.summarise(data)
    ttft, rate = result.targets
    assert ttft.measured == pytest.approx((1.25 * 1.10 * 1.15) ** (1 / 3)) and not rate.passed
    assert ttft.name.startswith("SGLang TTFT: accelhal's platform on cpu against a hand-written platform")
    assert "0 calls into accelhal per generate" in ttft.note
    calls = [row for row in result.rows if row[0].endswith("calls into accelhal per generate")]
    assert [row[1] for row in calls] == ["0 / 0", "0 / 0"]
    page = sglang.write_page(result, {"python": "3"}, {"repeats": 51}, tmp_path)
    assert page is not None and page.name == "RESULTS-sglang.md" and "| sglang | 0.5.23 |" in page.read_text()


@pytest.mark.slow
def test_the_sglang_engine_not_measured_is_stopped_with_what_it_started() -> None:
    """A process that polls, and its child that polls, use no CPU while :func:`benchmarks.sglang.stopped` holds."""
    import subprocess
    import time
    from types import SimpleNamespace

    from accelhal.process.child_processes import descendants, kill_tree
    from benchmarks import sglang

    polling = "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'while True: pass'])\nwhile True: pass"
    process = subprocess.Popen([sys.executable, "-c", polling])
    try:
        time.sleep(1.0)  # the child has started
        engine = SimpleNamespace(process=process)
        with sglang.stopped([engine]):  # type: ignore[list-item]
            tree = [process.pid, *descendants(process.pid)]
            assert len(tree) == 2
            time.sleep(0.2)
            before = [_cpu_ticks(pid) for pid in tree]
            time.sleep(0.5)
            assert [_cpu_ticks(pid) for pid in tree] == before
        time.sleep(0.5)
        assert all(after > was for after, was in zip([_cpu_ticks(pid) for pid in tree], before, strict=True))
    finally:
        kill_tree(process.pid)
        process.wait()


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime
