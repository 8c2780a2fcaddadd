"""The conformance suite, through ``run_suite``, on each simulated vendor backend (one vendor per process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelhal.testing.simulated import VENDORS, write_vendor_package
from tests.conformance_runs import run_pytest

RUN_SUITE = ("-c", "import sys; from accelhal.testing import run_suite; sys.exit(run_suite(sys.argv[1], sys.argv[2:]))")


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_simulated_vendor_conforms(tmp_path: Path, vendor: str) -> None:
    site = tmp_path / "site"
    write_vendor_package(vendor, site)
    run = run_pytest(tmp_path, pythonpath=(site,), launcher=(*RUN_SUITE, vendor), after_torch=True)
    assert run.returncode == 0, run.output[-4000:]
    assert not run.of("failed") and not run.of("error")
    assert len(run.of("passed")) > 150
    skipped = run.of("skipped")
    # a simulated runtime holds no tensors: those tests say so instead of passing
    assert f"the {vendor!r} backend cannot hold a tensor here" in skipped["test_claimed_dtypes_round_trip"]
    assert "test_seeding_reproduces" in run.of("passed") and "test_event_timing" in run.of("passed")
