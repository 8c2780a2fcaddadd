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
