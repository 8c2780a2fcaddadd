"""gloo on mps: a real two-rank job on the simulated mps, collectives staged through the host (``hostgloo``).

torch's gloo reduces cpu and cuda tensors only, yet torch names it mps's backend; accelhal
sets up gloo with mps tensors going through host copies instead
(:mod:`accelhal.distributed.host_staging`). This torch has no Metal, so the staging of
device tensors itself is run on the PrivateUse1 test device
(``tests/privateuse1/test_host_staging.py``).
"""

from __future__ import annotations

from pathlib import Path

from tests.distributed_forked_ranks import run

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "distributed.md"


def test_gloo_on_mps_is_set_up_with_host_staging_and_cpu_gloo_stays_plain() -> None:
    guide = " ".join(GUIDE.read_text().split())
    for rank, record in enumerate(run("mps")):
        refused, gloo_group = record["monitored_barrier"]  # the group's own and a gloo group's ran
        assert (refused, gloo_group) == ("monitored_barrier is only implemented for GLOO backend.", "gloo"), rank
        assert f"on `hostgloo` it raises torch's `ValueError: {refused}`" in guide
        assert record["setup"] == ["hostgloo", "hostgloo", "mps:0", "mps"], rank
        assert record["idempotent"], rank
        assert record["checks"] == dict.fromkeys(record["checks"], True) and len(record["checks"]) == 4, record
        message, variable = record["refused"]
        assert variable == "backend"
        assert message.startswith(
            "backend='cpu:gloo,mps:gloo' gives mps tensors to gloo, which carries cpu and cuda tensors only: "
            "pass backend='gloo' (accelhal then runs mps collectives on host copies, backend 'hostgloo') "
            "or backend='cpu:gloo'"
        )
        assert record["host_only"] == ["cpu:gloo", "cpu:gloo", 3.0, refused], rank  # torch refuses cpu:gloo too


def test_hostgloo_by_name_in_a_fresh_process_and_a_string_for_no_device_is_refused() -> None:
    for rank, record in enumerate(run("by_name")):
        assert record["setup"] == ["hostgloo", "hostgloo", 3.0], rank
        message, variable, initialised = record["refused"]
        assert (variable, initialised) == ("backend", False)
        assert message == (
            "backend='cuda:gloo' gives no backend to mps tensors nor to cpu tensors, so every collective would "
            "fail: name one for mps ('mps:hostgloo') or pass a plain backend name ('gloo')"
        )
