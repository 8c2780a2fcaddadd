"""The generic backend on the test device: torch's accelerator that no named backend claims, served by accelhal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.conftest import Result
from tests.cli.conftest import run_accelhal as run_command
from tests.privateuse1.child import on_device, run_accelhal, write_autoload_distribution
from tests.simulation import ROOT
from tests.torch_features import needs_generic_backend

pytestmark = [pytest.mark.privateuse1, needs_generic_backend]  # test_generic_old_torch.py: its verdict before

DETECT = """
import accelhal
from accelhal.selection import registry
report = accelhal.detect()
names_before = module.is_initialized()
acc = accelhal.get_accelerator() if report.chosen else None
print(json.dumps({
    "chosen": report.chosen, "rule": report.rule, "error": report.error, "explanation": report.explanation,
    "candidates": {c.name: [c.status.value, c.priority, c.plugin, c.reason] for c in report.candidates},
    "registered": registry().names(),
    "context_after_selection": module.is_initialized(),
    "class": None if acc is None else f"{type(acc).__module__}:{type(acc).__qualname__}",
}))
"""


def test_chosen_by_priority_without_creating_a_device_context() -> None:
    result = on_device(DETECT)
    assert (result["chosen"], result["rule"]) == ("testdev", "priority")
    status, priority, plugin, reason = result["candidates"]["testdev"]
    assert (status, priority, plugin) == ("available", 150, "generic")
    assert reason.startswith("2 device(s) of torch's accelerator 'testdev', which no named backend claims")
    assert "highest priority (150)" in result["explanation"]
    assert result["registered"][-2:] == ["testdev", "cpu"]  # below every named backend, above cpu
    assert result["context_after_selection"] is False
    assert result["class"] == "accelhal_backends.generic.accelerator:classes.testdev"


def test_forced_by_name_with_the_override_variable() -> None:
    result = on_device(DETECT, ACCELHAL_ACCELERATOR="testdev")
    assert (result["chosen"], result["rule"]) == ("testdev", "ACCELHAL_ACCELERATOR")
    assert result["context_after_selection"] is False


def test_generic_forces_the_device_torch_reports_or_says_why_it_cannot() -> None:
    result = on_device(DETECT, ACCELHAL_ACCELERATOR="generic")
    assert (result["chosen"], result["rule"]) == ("testdev", "ACCELHAL_ACCELERATOR")
    assert result["explanation"].startswith(
        "'generic', the backend of torch's accelerator 'testdev', was requested by ACCELHAL_ACCELERATOR; "
        "its probe says: 2 device(s) of torch's accelerator 'testdev'"
    )
    assert result["context_after_selection"] is False
    none = on_device(DETECT, devices=0, ACCELHAL_ACCELERATOR="generic")
    assert none["error"].startswith(
        "BackendUnavailableError: accelerator 'testdev' (requested by ACCELHAL_ACCELERATOR=generic) is not available: "
        "torch reports the accelerator 'testdev' but torch.accelerator.device_count() is 0."
    )
    claimed = on_device(DETECT, name="npu", ACCELHAL_ACCELERATOR="generic")  # the built-in npu backend claims it
    assert claimed["chosen"] is None
    assert claimed["error"] == (
        "BackendUnavailableError: accelerator 'generic' (requested by ACCELHAL_ACCELERATOR) is not available: no "
        "device torch.accelerator reports is left to the generic backend: torch's accelerator is 'npu', which the "
        "'npu' backend serves. Hint: Force that backend by its name (ACCELHAL_ACCELERATOR=npu), or block its plugin "
        "(ACCELHAL_BLOCK_PLUGINS=npu) to leave the device to the generic backend."
    )


def test_a_device_type_without_devices_is_no_device_and_forcing_it_fails() -> None:
    result = on_device(DETECT, devices=0)
    assert (result["chosen"], result["rule"]) == ("cpu", "fallback")
    status, _, _, reason = result["candidates"]["testdev"]
    assert status == "no-device" and "torch.accelerator.device_count() is 0" in reason
    forced = on_device(DETECT, devices=0, ACCELHAL_ACCELERATOR="testdev")
    assert forced["chosen"] is None and "device_count() is 0" in forced["error"]


def test_a_named_backend_of_the_same_device_type_wins() -> None:
    # the built-in npu backend claims device type "npu" even where torch_npu is missing
    result = on_device(DETECT, name="npu")
    assert result["candidates"]["npu"][2] == "npu" and result["candidates"]["npu"][0] == "not-installed"
    assert (result["chosen"], result["rule"]) == ("cpu", "fallback")
    blocked = on_device(DETECT, name="npu", ACCELHAL_BLOCK_PLUGINS="npu")  # without it, the generic serves npu
    assert (blocked["chosen"], blocked["candidates"]["npu"][2]) == ("npu", "generic")


def test_a_third_party_plugin_for_the_device_type_wins(tmp_path: Path) -> None:
    write_autoload_distribution(tmp_path, "testdev", accelhal_plugin="tests.privateuse1.named_plugin")
    listed = run_accelhal(tmp_path, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    output = json.loads(listed.stdout)
    assert output["chosen"] == "acme"
    names = [b["name"] for b in output["backends"]]
    assert "acme" in names and names[-1] == "cpu" and "testdev" not in names  # no generic "testdev" entry


MEMBERS = """
import accelhal
acc = accelhal.get_accelerator()
x = torch.ones(1024, dtype=torch.uint8, device=acc.device(1))
with acc.stream(acc.Stream(device=acc.device())):
    stream_seen = acc.current_stream() != acc.default_stream()
state = acc.get_rng_state(); a = torch.rand(3, device=acc.device()).cpu()
acc.set_rng_state(state); b = torch.rand(3, device=acc.device()).cpu()
acc.synchronize()
print(json.dumps({
    "count": acc.device_count(), "current": acc.current_device_name(), "allocated": acc.memory_allocated(1),
    "total": acc.total_memory(0), "stream": stream_seen, "replayed": a.equal(b),
    "generator": str(acc.default_generator(0).device), "pinned": acc.is_pinned(acc.pin_memory(torch.ones(2))),
    "dtypes": [str(d) for d in acc.supported_dtypes()], "fp64": acc.is_fp64_supported(),
    "comm": acc.communication_backend_name(), "graph": acc.create_graph(),
    "capabilities": sorted(c.value for c in acc.capabilities), "on": acc.on_accelerator(x),
    "gaps": acc.device_module_gaps(),
}))
"""


def test_members_act_on_real_tensors() -> None:
    result = on_device(MEMBERS)
    assert result["count"] == 2 and result["current"] == "testdev:0"
    assert result["allocated"] == 1024 and result["total"] == 8 << 30
    assert result["stream"] is True and result["replayed"] is True
    assert result["generator"] == "testdev:0" and result["pinned"] is True
    assert result["dtypes"] == ["torch.float32", "torch.float16", "torch.bfloat16"] and result["fp64"] is True
    assert result["comm"] == "" and result["graph"] is None  # none registered; no graphs: the contract's answers
    assert result["capabilities"] == ["device-memory-stats", "event-timing", "events", "pinning", "streams"]
    assert result["on"] is True
    assert result["gaps"] == ["get_device_name", "is_bf16_supported", "_lazy_call"]  # docs/backends.md says so


def test_capabilities_follow_what_the_device_has() -> None:
    code = """
import torch.distributed as dist
dist.Backend.register_backend("testcoll", lambda *args: None, devices=[name])
import accelhal
acc = accelhal.get_accelerator()
print(json.dumps({"fp64": acc.is_fp64_supported(), "comm": acc.communication_backend_name()}))
"""
    result = on_device(code, ACCELHAL_TESTDEV_FLOAT64="0")
    assert result == {"fp64": False, "comm": "testcoll"}


def test_info_and_list_show_it(tmp_path: Path) -> None:
    write_autoload_distribution(tmp_path, "testdev")
    info = run_accelhal(tmp_path, "info", "--json")
    assert info.returncode == 0, info.stderr
    accelerator = json.loads(info.stdout)["accelerator"]
    assert (accelerator["name"], accelerator["device_count"], accelerator["comm_backend"]) == ("testdev", 2, "")
    assert accelerator["capabilities"] == ["device-memory-stats", "event-timing", "events", "pinning", "streams"]
    assert (accelerator["compile_backend"], accelerator["compile_backend_source"]) == ("aot_eager", "fallback")
    human = " ".join(run_accelhal(tmp_path, "info").stdout.split())
    assert "compile backend: aot_eager (Inductor has no code generator for device type 'testdev':" in human
    assert "communication backend: none (torch.distributed has no backend registered for device type 'testdev')" in (
        human
    )
    listed = json.loads(run_accelhal(tmp_path, "list", "--json").stdout)
    entry = next(b for b in listed["backends"] if b["name"] == "testdev")
    assert (entry["active"], entry["plugin"], entry["priority"]) == (True, "generic", 150)
    explained = " ".join(run_accelhal(tmp_path, "explain").stdout.split())
    assert "priority 150, from built-in (plugin 'generic')" in explained


ACCELHAL = """
from tests.privateuse1 import device
device.load({name!r})
import runpy
runpy.run_module("accelhal", run_name="__main__", alter_sys=True)
"""
"""A program that loads the device as ``name``, then runs ``python -m accelhal``."""


def accelhal_with_device(*args: str, name: str = "testdev") -> Result:
    """``python -m accelhal ARGS`` where the device is loaded, forked from the warm interpreter (:mod:`tests.warm`)."""
    code = ACCELHAL.format(name=name)
    return run_command(*args, code=code, code_after_torch=True, env={"PYTHONPATH": str(ROOT)})


def test_explain_and_check_take_generic_as_selection_does() -> None:
    data = accelhal_with_device("explain", "generic", "--json").json()
    assert (data["name"], data["alias"], data["outcome"], data["active"]) == ("testdev", "generic", "active", "testdev")
    assert data["summary"].startswith(
        "'generic' stands for 'testdev', the backend of torch's accelerator; 'testdev' is active, chosen by rule "
        "'priority'"
    )
    text = accelhal_with_device("explain", "generic")
    assert text.returncode == 0, text.output
    assert " ".join(text.stdout.split()).startswith("testdev: active why: 'generic' stands for 'testdev', the backend")
    checked = accelhal_with_device("check", "generic", "--json", "--", "-k", "test_name")  # a few of the kit's tests
    summary = checked.json()
    assert checked.returncode == 0 and (summary["backend"], summary["failed"]) == ("testdev", 0), checked.output
    assert summary["passed"] > 0
    claimed = accelhal_with_device("explain", "generic", "--json", name="npu")  # the built-in npu backend claims it
    assert (claimed.returncode, claimed.json()["outcome"]) == (0, "replaced")
    assert claimed.json()["summary"] == (
        "no device torch.accelerator reports is left to the generic backend: torch's accelerator is 'npu', which the "
        "'npu' backend serves."
    )
    refused = accelhal_with_device("check", "generic", name="npu")
    assert refused.returncode == 2 and "Traceback" not in refused.output, refused.output
    assert "Hint: Ask for that backend by its name (accelhal check npu), or block its plugin" in " ".join(
        refused.stderr.split()
    )


SKIPS = {
    "environment.py": "the 'testdev' backend has no communication backend: torch.distributed has none registered "
    "for device type 'testdev'",
    "base.py:75": "the 'testdev' backend does not declare capability 'graphs' (not in classes.testdev.capabilities)",
    "base.py:81": "the 'testdev' backend declares",
}


def test_the_conformance_kit_passes_with_every_skip_explained(tmp_path: Path) -> None:
    write_autoload_distribution(tmp_path, "testdev")
    checked = run_accelhal(
        tmp_path, "--verbose", "check", "testdev", "--json", "--", "-rs"
    )  # pytest's summary on stderr
    summary = json.loads(checked.stdout)
    assert summary["exit_code"] == 0 and summary["failed"] == 0 and summary["errors"] == 0, summary["failures"]
    assert summary["passed"] > 200
    skips = re.findall(r"SKIPPED \[(\d+)\] \S+/(\S+?:\d+): (.+)", checked.stderr)
    assert sum(int(count) for count, _, _ in skips) == summary["skipped"] == 5
    for _, where, reason in skips:
        expected = next(text for key, text in SKIPS.items() if where.startswith(key) or key.startswith(where))
        assert reason.startswith(expected), (where, reason)


def test_the_benchmark_pairs_answer_alike() -> None:
    result = on_device("""
import accelhal
from benchmarks.generic import PAIRS, namespace
acc = accelhal.get_accelerator()
ns = namespace(acc)
def answer(statement):
    if statement.startswith("with "):
        exec(statement, ns)
        return "a context"
    value = eval(statement, ns)
    if isinstance(value, torch.Tensor):
        return [str(value.device), str(value.dtype), value.cpu().tolist(), value.is_pinned()]
    return str(value) if isinstance(value, (torch.Stream, type)) else value
print(json.dumps({p.member: [answer(p.accelhal), answer(p.direct["testdev"])] for p in PAIRS}))
""")
    assert len(result) == 20
    assert {member: pair for member, pair in result.items() if pair[0] != pair[1]} == {}
