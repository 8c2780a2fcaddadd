"""The vendor backends on a real device: the test device renamed to each vendor's type, with its module surface.

Each vendor runs in its own interpreter (PrivateUse1 is renamed once per process) whose
path holds the vendor's package over the test device (:mod:`tests.privateuse1.vendor`):
accelhal selects its named backend for the vendor, its members act on real tensors, then
the conformance kit runs on it through ``run_suite``. The five interpreters start together.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conformance_runs import Run, run_pytest
from tests.privateuse1.vendor import VENDORS, write_vendor_package
from tests.torch_features import needs_accelerator_memory_info

pytestmark = [pytest.mark.privateuse1, needs_accelerator_memory_info]  # the vendor modules' memory figures use it

MEMBERS = """
import json, os, sys, torch, accelhal
from accelhal.contract.spec import Capability
from tests.privateuse1 import runtime

vendor = sys.argv[1]
report = accelhal.detect()
acc = accelhal.get_accelerator()
context_after_selection = runtime.is_initialized()
caps = acc.capabilities
before = acc.memory_allocated(1)
x = torch.ones(1024, dtype=torch.uint8, device=acc.device_name(1))
allocated, peak = acc.memory_allocated(1) - before, acc.max_memory_allocated(1) - before
del x
freed = acc.memory_allocated(1) - before
acc.manual_seed(7); a = torch.rand(4, device=acc.device()).cpu()
state = acc.get_rng_state(); b = torch.rand(4, device=acc.device()).cpu()
acc.set_rng_state(state); c = torch.rand(4, device=acc.device()).cpu()
acc.manual_seed(7); d = torch.rand(4, device=acc.device()).cpu()
stream = acc.Stream()
with acc.stream(stream):
    on_stream = acc.current_stream() == stream
    y = torch.arange(4.0, device=acc.device_name()) * 2
start, end = acc.Event(enable_timing=True), acc.Event(enable_timing=True)
start.record(); end.record(); end.synchronize()
acc.synchronize()
with torch.profiler.profile() as profile:
    acc.range_push("accelhal-range"); acc.range_pop()
host = torch.empty(3 * 4096, dtype=torch.uint8)
address = host.data_ptr() + (-host.data_ptr()) % acc.pin_memory_alignment()
registered = None
if Capability.HOST_REGISTRATION in caps:
    registered = acc.register_host_memory(address, 4096)
    acc.unregister_host_memory(address)
import torch.distributed as dist
with open(os.environ["VENDOR_MEMBERS_OUT"], "w") as out:
    json.dump({
        "chosen": report.chosen, "rule": report.rule, "class": type(acc).__qualname__,
        "plugins": {c.name: c.plugin for c in report.candidates if c.status.value == "available"},
        "module": acc.module.__name__, "module_doc": acc.module.__doc__, "context": context_after_selection,
        "allocated": [allocated, peak, freed], "rng": [a.equal(d), b.equal(c), a.equal(b)],
        "on_stream": on_stream, "y": [str(y.device), y.cpu().tolist()], "elapsed": start.elapsed_time(end),
        "ranges": [Capability.RANGES in caps, "accelhal-range" in {e.name for e in profile.events()}],
        "registered": registered, "pinned": acc.is_pinned(acc.pin_memory(torch.ones(4))),
        "total": acc.total_memory(0), "description": acc.device_description(1),
        "comm": [acc.communication_backend_name(), acc.communication_backend_name() in dist.Backend.backend_list],
        "dtypes": [str(t) for t in acc.supported_dtypes()],
    }, out)
sys.exit(run_suite(vendor, sys.argv[2:]))
"""
"""Prints nothing: writes the members' answers to ``VENDOR_MEMBERS_OUT``, then runs the conformance kit."""

LAUNCHER = ("-c", "from accelhal.testing import run_suite\n" + MEMBERS)

EXPECTED_SKIPS = {
    "test_graph_objects": "does not declare capability 'graphs'",
    "test_replay_gives_the_eager_result": "does not declare capability 'graphs'",
    "test_streams_absent_are_none": "declares 'streams'; its absence is not tested",
    "test_events_absent_are_none": "declares 'events'; its absence is not tested",
}
"""What every vendor skips, and why: the device has no graphs; streams and events are there."""

NO_IS_INITIALIZED = "has no device module with is_initialized() (its 'module' is torch_sdaa.sdaa)"
"""torch_sdaa's recorded module has no ``is_initialized``: the probe test cannot observe a context."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Run]]:
    """Every vendor's members and conformance run, the interpreters started together."""

    def run(vendor: str) -> tuple[dict[str, Any], Run]:
        tmp = tmp_path_factory.mktemp(vendor)
        site = write_vendor_package(vendor, tmp / "site")
        out = tmp / "members.json"
        repository = Path(__file__).resolve().parents[2]
        result = run_pytest(
            tmp, pythonpath=(site, repository), launcher=(*LAUNCHER, vendor), VENDOR_MEMBERS_OUT=str(out)
        )
        assert out.exists(), result.output[-4000:]
        return json.loads(out.read_text()), result

    with ThreadPoolExecutor(len(VENDORS)) as pool:
        return dict(zip(VENDORS, pool.map(run, VENDORS), strict=True))


def test_the_vendors_served() -> None:
    assert VENDORS == ["mlu", "musa", "npu", "sdaa", "supa"]  # hpu: torch knows its type, PrivateUse1 cannot take it


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_vendor_backend_is_chosen_and_acts_on_real_tensors(
    runs: dict[str, tuple[dict[str, Any], Run]], vendor: str
) -> None:
    members, _ = runs[vendor]
    # the named backend, not the generic one, through the vendor's module; probing created no context
    assert (members["chosen"], members["rule"], members["plugins"][vendor]) == (vendor, "priority", vendor)
    assert members["module"] in (f"torch_{vendor}.{vendor}", f"torch_{vendor}")
    assert members["module_doc"] == f"The accelhal test device, shaped as torch_{vendor}'s device module."
    assert members["context"] is False
    # memory figures move with a real allocation on device 1 and come back when it is freed
    assert members["allocated"] == [1024, 1024, 0]
    assert members["total"] == 8 << 30
    described = f"{vendor}:1" if vendor == "sdaa" else f"accelhal test device {vendor}:1"  # sdaa: no get_device_name
    assert members["description"] == described
    # RNG: the seed reproduces real draws, the state round trip replays one
    assert members["rng"] == [True, True, False]
    assert members["on_stream"] is True
    assert members["y"] == [f"{vendor}:0", [0.0, 2.0, 4.0, 6.0]]
    assert members["elapsed"] >= 0.0
    has_ranges, recorded = members["ranges"]
    assert has_ranges == (vendor in ("mlu", "supa")) and recorded == has_ranges  # cnpx, brtx: profiler ranges
    assert members["registered"] is (True if vendor == "npu" else None)  # npurt: page-locked
    assert members["pinned"] is True
    assert members["comm"][1] is True  # the vendor's collectives, registered as its package does
    assert members["dtypes"] == ["torch.float32", "torch.float16", "torch.bfloat16"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_vendor_backend_passes_the_conformance_kit(
    runs: dict[str, tuple[dict[str, Any], Run]], vendor: str
) -> None:
    _, run = runs[vendor]
    assert run.returncode == 0, run.output[-4000:]
    assert not run.of("failed") and not run.of("error")
    assert len(run.of("passed")) > 200
    expected = dict(EXPECTED_SKIPS)
    if vendor == "sdaa":
        expected["test_probe_creates_no_device_context"] = NO_IS_INITIALIZED
    skipped = run.of("skipped")
    assert sorted(skipped) == sorted(expected)
    for test, reason in expected.items():
        assert reason in skipped[test], (test, skipped[test])
