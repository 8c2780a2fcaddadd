"""The test device itself: a real PrivateUse1 device, seen through torch's public API in fresh interpreters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.privateuse1.child import build_in_child, on_device, write_autoload_distribution
from tests.simulation import run_python
from tests.torch_features import needs_accelerator_memory_info

pytestmark = pytest.mark.privateuse1


def test_tensors_live_on_the_device_and_move_to_and_from_cpu() -> None:
    result = on_device("""
x = torch.arange(12.0, device=f"{name}:0").reshape(3, 4)
y = x.t().to(f"{name}:1")            # a non-contiguous view copied across devices
z = (y * 2 + 1).sum()
lin = torch.nn.Linear(4, 2).to(name)
lin(torch.ones(1, 4, device=name)).sum().backward()
storage = x.untyped_storage(); storage.resize_(100)
print(json.dumps({
    "x": str(x.device), "y": str(y.device), "z": str(z.device),
    "y_values": y.cpu().tolist(), "item": z.item(), "contiguous": y.contiguous().cpu().tolist(),
    "grad": str(lin.weight.grad.device), "methods": [x.is_testdev, str(x.cpu().testdev().device)],
    "storage": [str(storage.device), storage.nbytes()],
}))
""")
    expected = [[0.0, 4.0, 8.0], [1.0, 5.0, 9.0], [2.0, 6.0, 10.0], [3.0, 7.0, 11.0]]
    assert (result["x"], result["y"], result["z"]) == ("testdev:0", "testdev:1", "testdev:1")
    assert result["y_values"] == expected and result["contiguous"] == expected
    assert result["item"] == sum(2 * v + 1 for v in range(12))
    assert result["grad"] == "testdev:0"
    assert result["methods"] == [True, "testdev:0"]
    assert result["storage"] == ["testdev:0", 100]


def test_torch_accelerator_reports_the_device_and_switches_devices() -> None:
    result = on_device("""
acc = torch.accelerator
before = acc.current_device_index()
acc.set_device_index(1)
after = acc.current_device_index()
with acc.device_index(0):
    inside = acc.current_device_index()
with module.device(0):
    module_inside = module.current_device()
print(json.dumps({
    "current": str(acc.current_accelerator()), "checked": str(acc.current_accelerator(check_available=True)),
    "available": acc.is_available(), "count": acc.device_count(),
    "indices": [before, after, inside, acc.current_device_index(), module_inside],
    "default_device": str(torch.ones(1, device=name).device),
    "module": torch.get_device_module(name).__name__,
}))
""")
    assert (result["current"], result["checked"]) == ("testdev", "testdev")
    assert result["available"] is True and result["count"] == 2
    assert result["indices"] == [0, 1, 0, 1, 0]
    assert result["default_device"] == "testdev:1"
    assert result["module"] == "tests.privateuse1.runtime"


def test_zero_devices_is_an_accelerator_type_without_a_device() -> None:
    result = on_device(
        """
try:
    torch.ones(1, device=name)
    error = None
except RuntimeError as exc:
    error = str(exc)
acc = torch.accelerator
print(json.dumps({"type": str(acc.current_accelerator()), "checked": acc.current_accelerator(check_available=True),
                  "available": acc.is_available(), "count": acc.device_count(), "error": error}))
""",
        devices=0,
    )
    assert result == {
        "type": "testdev",
        "checked": None,
        "available": False,
        "count": 0,
        "error": "the test device has no devices (ACCELHAL_TESTDEV_DEVICES=0)",
    }


def test_streams_and_events() -> None:
    result = on_device("""
acc = torch.accelerator
default = acc.current_stream()
s1, s2 = torch.Stream(device=name), torch.Stream(device=f"{name}:1")
acc.set_stream(s1)
current = acc.current_stream()
acc.set_stream(default)
start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
start.record(s1); torch.ones(100, device=name).sum(); end.record(s1); end.synchronize()
untimed = torch.Event(); untimed.record()
try:
    untimed.elapsed_time(untimed); untimed_error = None
except (RuntimeError, ValueError) as exc:
    untimed_error = str(exc)
s1.synchronize(); acc.synchronize(); acc.synchronize(1)
print(json.dumps({
    "default": [str(default.device), default.stream_id],
    "new": [str(s1.device), str(s2.device), s1.stream_id != s2.stream_id != 0],
    "current": current == s1, "query": [s1.query(), end.query()],
    "elapsed": start.elapsed_time(end), "untimed_error": untimed_error,
}))
""")
    assert result["default"] == ["testdev:0", 0]
    assert result["new"] == ["testdev:0", "testdev:1", True]
    assert result["current"] is True and result["query"] == [True, True]
    assert result["elapsed"] >= 0.0
    assert "enable_timing" in result["untimed_error"]


def test_default_generator_state_round_trip_and_torch_manual_seed() -> None:
    result = on_device("""
state = module.get_rng_state()
a = torch.randn(5, device=name).cpu()
module.set_rng_state(state)
b = torch.randn(5, device=name).cpu()
torch.manual_seed(7); c = torch.rand(3, device=f"{name}:1").cpu()
torch.manual_seed(7); d = torch.rand(3, device=f"{name}:1").cpu()
g = torch.Generator(device=name); g.manual_seed(3); e = torch.randn(4, device=name, generator=g).cpu()
g.manual_seed(3); f = torch.randn(4, device=name, generator=g).cpu()
module.manual_seed(11)
print(json.dumps({
    "state": [state.dtype == torch.uint8, str(state.device)], "replayed": a.equal(b),
    "differs": not a.equal(torch.randn(5, device=name).cpu()),
    "manual_seed": c.equal(d), "generator": [str(g.device), e.equal(f)], "initial_seed": module.initial_seed(),
    "all": len(module.get_rng_state_all()),
}))
""")
    assert result["state"] == [True, "cpu"]
    assert result["replayed"] is True and result["differs"] is True
    assert result["manual_seed"] is True
    assert result["generator"] == ["testdev:0", True]
    assert result["initial_seed"] == 11 and result["all"] == 2


@needs_accelerator_memory_info
def test_memory_figures_follow_allocations() -> None:
    result = on_device(
        """
acc = torch.accelerator
base = acc.memory_allocated(0)
x = torch.empty(1024, dtype=torch.uint8, device=name)
with_x = acc.memory_allocated(0)
del x
freed = acc.memory_allocated(0)
peak = acc.max_memory_allocated(0)
acc.reset_peak_memory_stats(0)
stats = acc.memory_stats(0)
free, total = acc.get_memory_info(0)
try:
    torch.empty(2 << 20, dtype=torch.uint8, device=name); oom = None
except torch.OutOfMemoryError as exc:
    oom = str(exc)
print(json.dumps({"grew": with_x - base, "freed": freed - base, "peak": peak - base,
                  "peak_after_reset": acc.max_memory_allocated(0) - base, "other_device": acc.memory_allocated(1),
                  "stats": stats["allocated_bytes.all.current"] - base, "total": total, "free": free, "oom": oom}))
""",
        ACCELHAL_TESTDEV_MEMORY=str(1 << 20),
    )
    assert (result["grew"], result["freed"], result["peak"], result["peak_after_reset"]) == (1024, 0, 1024, 0)
    assert result["other_device"] == 0 and result["stats"] == 0
    assert result["total"] == 1 << 20 and result["free"] <= result["total"]
    assert "out of memory" in result["oom"]


def test_pinned_host_memory() -> None:
    result = on_device("""
pinned = torch.ones(8).pin_memory()
moved = pinned.to(name, non_blocking=True)
print(json.dumps({"pinned": pinned.is_pinned(), "device": str(pinned.device), "plain": torch.ones(8).is_pinned(),
                  "moved": moved.cpu().tolist() == [1.0] * 8}))
""")
    assert result == {"pinned": True, "device": "cpu", "plain": False, "moved": True}


FORK = """
import multiprocessing
def child(queue):
    try:
        queue.put(float(torch.ones(2, device=name).sum()))
    except RuntimeError as exc:
        queue.put(str(exc))
def fork():
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=child, args=(queue,))
    process.start(); process.join(60)
    return queue.get(timeout=5)
queried = [torch.accelerator.device_count(), torch.accelerator.is_available(),
           str(torch.accelerator.current_accelerator()), module.current_device()]
initialized_after_queries = module.is_initialized()
after_queries = fork()
torch.ones(1, device=name)
print(json.dumps({"initialized_after_queries": initialized_after_queries, "after_queries": after_queries,
                  "initialized_after_use": module.is_initialized(),
                  "contexts": [module.has_primary_context(i) for i in range(2)],
                  "after_use": fork()}))
"""


def test_queries_create_no_context_and_a_fork_after_them_can_use_the_device() -> None:
    result = on_device(FORK)
    assert result["initialized_after_queries"] is False and result["after_queries"] == 2.0
    assert result["initialized_after_use"] is True and result["contexts"] == [True, False]
    assert "forked subprocess" in result["after_use"]


@pytest.mark.parametrize("vendor", ["npu", "mlu", "sdaa", "musa"])
def test_loads_under_a_vendor_device_name(vendor: str) -> None:
    result = on_device(
        """
x = torch.ones(2, device=f"{name}:1")
print(json.dumps({"accelerator": str(torch.accelerator.current_accelerator()), "device": str(x.device),
                  "module": getattr(torch, name) is module, "sum": float(x.sum())}))
""",
        name=vendor,
    )
    assert result == {"accelerator": vendor, "device": f"{vendor}:1", "module": True, "sum": 2.0}


def test_a_second_name_in_the_same_process_is_refused() -> None:
    result = on_device("""
try:
    device.load("other"); error = None
except RuntimeError as exc:
    error = str(exc)
print(json.dumps({"error": error, "same": device.load(name) is module}))
""")
    refused = "the test device is loaded as 'testdev' in this process; cannot load 'other'"
    assert result == {"error": refused, "same": True}


@needs_accelerator_memory_info
def test_a_device_without_float64_says_so_in_its_capability() -> None:
    result = on_device(
        """
dtypes = torch.accelerator.get_device_capability()["supported_dtypes"]
try:
    torch.zeros(1, dtype=torch.float64, device=name); error = None
except TypeError as exc:
    error = str(exc)
print(json.dumps({"float64": torch.float64 in dtypes, "float32": torch.float32 in dtypes, "error": error}))
""",
        ACCELHAL_TESTDEV_FLOAT64="0",
    )
    assert result == {
        "float64": False,
        "float32": True,
        "error": "the test device does not support float64 (ACCELHAL_TESTDEV_FLOAT64=0)",
    }


def test_import_torch_autoloads_it_through_a_torch_backends_entry_point(tmp_path: Path) -> None:
    write_autoload_distribution(tmp_path, "testdev")
    code = (
        "import json, torch\n"
        "print(json.dumps({'accelerator': str(torch.accelerator.current_accelerator()), "
        "'sum': float(torch.ones(3, device='mlu').sum())}))"
    )
    assert run_python(tmp_path, code, ACCELHAL_TESTDEV_NAME="mlu") == {"accelerator": "mlu", "sum": 3.0}


def test_the_build_is_cached_between_runs(testdev_build: dict[str, Any]) -> None:
    again = build_in_child()
    assert again["built"] is False and again["path"] == testdev_build["path"]


@pytest.mark.slow
def test_a_corrupt_cached_library_is_rebuilt(testdev_build: dict[str, Any], tmp_path: Path) -> None:
    built = Path(testdev_build["path"]).parent
    cache = tmp_path / "cache"
    shutil.copytree(built, cache / built.name)
    library = cache / built.name / Path(testdev_build["path"]).name
    library.write_bytes(b"\x7fELF truncated")
    rebuilt = build_in_child(ACCELHAL_TESTDEV_CACHE=str(cache))
    assert rebuilt["built"] is True and rebuilt["path"] == str(library)
    manifest = json.loads((library.parent / "build.json").read_text())
    assert manifest["library"] == library.name and library.stat().st_size > 1000
    assert build_in_child(ACCELHAL_TESTDEV_CACHE=str(cache))["built"] is False
