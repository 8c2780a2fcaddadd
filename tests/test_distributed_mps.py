"""gloo on mps: a real two-rank job on the simulated mps, collectives staged through the host (``hostgloo``).

torch's gloo reduces cpu and cuda tensors only, yet torch names it mps's backend; accelhal
sets up gloo with mps tensors going through host copies instead
(:mod:`accelhal.distributed.host_staging`). This torch has no Metal, so the staging of
device tensors itself is run on the PrivateUse1 test device
(``tests/privateuse1/test_host_staging.py``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from tests.distributed_forked_ranks import run

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "distributed.md"
TORCH_MONITORED_BARRIER = {
    (2, 4): ("monitored_barrier is only implemented for GLOO backend.", "refused"),
    (2, 15): ("monitored_barrier requires a group with a CPU-capable backend (e.g. GLOO).", "runs"),
}
"""torch's ``monitored_barrier`` from each release on: its refusal of a ``hostgloo`` group, and what it
does on ``"cpu:gloo"`` (before 2.15 it compares the backend's name with ``gloo``; from 2.15 it asks
whether the group carries cpu tensors)."""


def torch_monitored_barrier() -> tuple[str, str]:
    """The row of :data:`TORCH_MONITORED_BARRIER` for the installed torch."""
    installed = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    return TORCH_MONITORED_BARRIER[max(release for release in TORCH_MONITORED_BARRIER if release <= installed)]


def test_gloo_on_mps_is_set_up_with_host_staging_and_cpu_gloo_stays_plain() -> None:
    guide = " ".join(GUIDE.read_text().split())
    refusal, on_cpu_gloo = torch_monitored_barrier()
    for message, _ in TORCH_MONITORED_BARRIER.values():
        assert f"`ValueError: {message}`" in guide
    for rank, record in enumerate(run("mps")):
        refused, gloo_group = record["monitored_barrier"]  # the group's own and a gloo group's ran
        assert (refused, gloo_group) == (refusal, "gloo"), rank
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
        assert record["host_only"] == ["cpu:gloo", "cpu:gloo", 3.0, refused if on_cpu_gloo == "refused" else ""]


def test_hostgloo_by_name_in_a_fresh_process_and_a_string_for_no_device_is_refused() -> None:
    for rank, record in enumerate(run("by_name")):
        assert record["setup"] == ["hostgloo", "hostgloo", 3.0], rank
        message, variable, initialised = record["refused"]
        assert (variable, initialised) == ("backend", False)
        assert message == (
            "backend='cuda:gloo' gives no backend to mps tensors nor to cpu tensors, so every collective would "
            "fail: name one for mps ('mps:hostgloo') or pass a plain backend name ('gloo')"
        )
