"""npu, hpu, mlu, sdaa, supa and musa against simulated vendor runtimes (one vendor per subprocess).

The simulated packages are real importable packages on ``PYTHONPATH`` (``find_spec`` finds
them); importing one registers the vendor's device module through torch's PrivateUse1
mechanism, as the real package does. Only module-level calls work: no tensors on the device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from accelhal.testing.simulated import VENDORS
from tests.simulation import DETECT, run_python, simulated_site

SIMULATED = tuple(sorted(VENDORS))  # every built-in vendor backend, from the specs

LIBHCCL = "libhccl.so: cannot open shared object file: No such file or directory"


@pytest.mark.parametrize("vendor", SIMULATED)
def test_selected_by_priority(vendor: str, tmp_path: Path) -> None:
    """Selection only: the conformance kit's run on each simulation is tests/test_conformance_simulated.py."""
    result = run_python(simulated_site(tmp_path, (vendor,)), DETECT)
    assert result["chosen"] == vendor and result["rule"] == "priority"
    assert result["candidates"][vendor]["status"] == "available"
    assert result["candidates"][vendor]["reason"].startswith("2 device(s)")


@pytest.mark.parametrize("vendor", SIMULATED)
def test_runtime_without_devices_is_no_device_and_selection_falls_back(vendor: str, tmp_path: Path) -> None:
    report = run_python(simulated_site(tmp_path, (vendor,)), DETECT, devices=0, FORCE_AFTERWARDS=vendor)
    candidate = report["candidates"][vendor]
    assert candidate["status"] == "no-device"
    assert "device_count() is 0" in candidate["reason"] and candidate["hint"]
    assert (report["chosen"], report["rule"]) == ("cpu", "fallback")
    forced = report["forced"]
    assert forced["chosen"] is None and "device_count() is 0" in forced["error"]


def test_higher_priority_wins_when_two_runtimes_are_present(tmp_path: Path) -> None:
    # npu renames PrivateUse1; hpu is a device type torch knows: both fit in one process
    site = simulated_site(tmp_path, ("npu", "hpu"))
    report = run_python(site, DETECT)
    assert report["chosen"] == "npu"
    assert report["candidates"]["hpu"]["status"] == "available"
    assert "lower priority than 'npu'" in report["candidates"]["hpu"]["reason"]


def test_broken_vendor_stack_is_a_verdict_with_a_hint_and_selection_goes_on(tmp_path: Path) -> None:
    site = simulated_site(tmp_path, broken={"torch_npu": LIBHCCL})
    report = run_python(site, DETECT, FORCE_AFTERWARDS="npu")
    npu = report["candidates"]["npu"]
    assert npu["status"] == "broken"
    assert npu["reason"] == f"import torch_npu failed: ImportError: {LIBHCCL}"
    assert "set_env.sh" in npu["hint"]
    assert (report["chosen"], report["rule"]) == ("cpu", "fallback")
    forced = report["forced"]  # forcing it is an error naming the cause, never a fallback
    assert forced["chosen"] is None
    assert "BackendUnavailableError" in forced["error"] and "libhccl.so" in forced["error"]
    assert "set_env.sh" in forced["error"]


def test_broken_stack_does_not_hide_a_working_lower_priority_one(tmp_path: Path) -> None:
    site = simulated_site(tmp_path, ("mlu",), broken={"torch_npu": LIBHCCL})
    report = run_python(site, DETECT)
    assert report["candidates"]["npu"]["status"] == "broken"
    assert (report["chosen"], report["rule"]) == ("mlu", "priority")


MEMORY_AND_HOST = """
import json, accelhal
from accelhal.testing import simulated
acc = accelhal.get_accelerator()
rule = accelhal.detect().rule
before = acc.memory_allocated()
simulated.RUNTIME.allocate(4096)
grown = acc.memory_allocated()
peak = acc.max_memory_allocated()
simulated.RUNTIME.free(4096)
out = {"name": acc.name, "rule": rule, "before": before, "grown": grown, "peak": peak, "after": acc.memory_allocated(),
       "available": acc.available_memory(), "total": acc.total_memory()}
if acc.name == "npu":
    out["aligned"] = acc.pin_memory_alignment()
    out["registered"] = acc.register_host_memory(8192, 4096)
    acc.unregister_host_memory(8192)
    out["left"] = len(simulated.RUNTIME.registered)
if acc.name in ("mlu", "supa"):
    acc.range_push("step")
    out["ranges"] = list(simulated.RUNTIME.ranges)
    acc.range_pop()
print(json.dumps(out))
"""


@pytest.mark.parametrize("vendor", SIMULATED)
def test_forced_by_variable_with_memory_figures_that_follow_the_runtime(vendor: str, tmp_path: Path) -> None:
    result = run_python(simulated_site(tmp_path, (vendor,)), MEMORY_AND_HOST, ACCELHAL_ACCELERATOR=vendor.upper())
    assert (result["name"], result["rule"]) == (vendor, "ACCELHAL_ACCELERATOR")
    assert result["grown"] == result["before"] + 4096
    assert result["peak"] >= result["grown"]
    assert result["after"] == result["before"]
    assert 0 < result["available"] <= result["total"]
    if vendor == "npu":
        assert (result["aligned"], result["registered"], result["left"]) == (4096, True, 0)
    if vendor in ("mlu", "supa"):
        assert result["ranges"] == ["step"]


HPU_NO_SIDE_EFFECTS = """
import json, os, torch
before = dict(os.environ)
import accelhal
acc = accelhal.get_accelerator()
acc.device_count(); acc.current_device()
print(json.dumps({"name": acc.name, "deterministic": torch.are_deterministic_algorithms_enabled(),
                  "env_changed": sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)),
                  "compile": acc.get_compile_backend()}))
"""


def test_hpu_has_no_process_wide_side_effects(tmp_path: Path) -> None:
    result = run_python(simulated_site(tmp_path, ("hpu",)), HPU_NO_SIDE_EFFECTS)
    assert result == {"name": "hpu", "deterministic": False, "env_changed": [], "compile": "hpu_backend"}


def test_torch_supa_answering_torch_cuda_makes_cuda_replaced_and_names_supa(tmp_path: Path) -> None:
    # torch_supa sets torch.supa's functions on torch.cuda (transfer_to_supa); cuda must not look available
    report = run_python(simulated_site(tmp_path, ("supa",)), DETECT, FORCE_AFTERWARDS="cuda")
    assert (report["chosen"], report["rule"]) == ("supa", "priority")
    cuda = report["candidates"]["cuda"]
    assert cuda["status"] == "replaced"
    assert cuda["reason"].startswith("torch.cuda's functions were replaced by torch_supa")
    assert (
        "torch.cuda.device_count/is_available/current_device/get_device_properties from torch_supa.supa"
        in (cuda["reason"])
    )
    assert "'supa' backend (ACCELHAL_ACCELERATOR=supa)" in cuda["hint"]
    forced = report["forced"]  # forcing cuda is an error that says who answers torch.cuda
    assert forced["chosen"] is None
    assert "BackendUnavailableError" in forced["error"] and "replaced by torch_supa" in forced["error"]
    assert "ACCELHAL_ACCELERATOR=supa" in forced["error"]


def test_torch_musa_leaves_torch_cuda_to_torch(tmp_path: Path) -> None:
    report = run_python(simulated_site(tmp_path, ("musa",)), DETECT)
    assert (report["chosen"], report["rule"]) == ("musa", "priority")
    assert report["candidates"]["cuda"]["status"] == "no-device"
