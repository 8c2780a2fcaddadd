"""The conformance suite on cpu (in this process), and its verdicts on a deliberately broken backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelhal.testing.conformance import ConformanceSuite
from tests.conformance_runs import SUITE, Run, install_package, run_pytest

DATA = Path(__file__).resolve().parent / "data"


class TestCpuConformance(ConformanceSuite):
    """The whole suite passes on the cpu backend (capabilities it lacks are skipped with the reason)."""

    backend = "cpu"


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("broken")
    site = tmp / "site"
    site.mkdir()
    install_package(site, DATA / "broken_accel", "broken-accel", {"broken": "broken_accel"})
    return run_pytest(tmp, str(SUITE), "--accelhal-backend=broken", pythonpath=(site,))


@pytest.mark.parametrize(
    ("test", "fragments"),
    [
        ("test_return_type[current_device]", ["current_device()", "expected int", "'0' (str)"]),
        ("test_member_is_present[Event]", ["Event", "expected the contract member", "missing"]),
        ("test_claimed_dtypes_round_trip", ["supported_dtypes()", "round-trip", "torch.float8_e4m3fn"]),
        ("test_stream_is_a_context_manager", ["stream(current_stream())", "expected a context manager", "None"]),
        ("test_probe_creates_no_device_context", ["'broken' probe", "is_initialized() False", "is True"]),
    ],
)
def test_broken_backend_fails_the_matching_test(broken_run: Run, test: str, fragments: list[str]) -> None:
    failed = broken_run.of("failed")
    assert test in failed, f"{test} did not fail:\n{broken_run.output[-3000:]}"
    for fragment in fragments:
        assert fragment in failed[test], f"{fragment!r} not in the failure of {test}:\n{failed[test][:2000]}"


def test_broken_backend_passes_what_it_does_right(broken_run: Run) -> None:
    passed = broken_run.of("passed")
    for test in (
        "test_seeding_reproduces",
        "test_unknown_builder_raises_on_load",
        "test_figure_is_bytes[total_memory]",
    ):
        assert test in passed, f"{test}: {broken_run.outcomes.get(test)}"
    assert broken_run.returncode == 1
    assert len(passed) > 150


def test_absent_capabilities_are_skipped_with_the_reason(broken_run: Run) -> None:
    skipped = broken_run.of("skipped")
    assert "'graphs'" in skipped["test_replay_gives_the_eager_result"]
    assert "BrokenAccelerator.capabilities" in skipped["test_replay_gives_the_eager_result"]
