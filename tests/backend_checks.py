"""Behavioural checks of the contract, run against every backend (in-process or in a subprocess).

Run in a subprocess as ``python -m tests.backend_checks`` (the active accelerator is
checked) it prints ``{"backend": ..., "results": {check: "ok" | "FAIL ..."}}`` as JSON.
Tests on tensors are left to backends whose tensors exist here (cpu) and to the GPU suite:
a simulated device has no tensors.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from collections.abc import Callable

import torch

import accelhal
from accelhal.contract import Accelerator
from accelhal.selection import registry
from accelhal.spec import Capability
from accelhal.validation import contract_problems

Check = Callable[[Accelerator], None]
CHECKS: dict[str, Check] = {}


def check(func: Check) -> Check:
    CHECKS[func.__name__] = func
    return func


@check
def identity(acc: Accelerator) -> None:
    assert contract_problems(type(acc)) == []
    spec = registry().backends[acc.name].spec
    assert acc.device_type == spec.device_type
    assert acc.communication_backend_name() == spec.comm_backend
    assert tuple(acc.visible_devices_envs()) == spec.visible_devices_envs
    assert acc.device_name() == acc.device_type


@check
def devices(acc: Accelerator) -> None:
    assert acc.is_available() is True
    count = acc.device_count()
    assert isinstance(count, int) and count >= 1
    index = acc.current_device()
    assert type(index) is int
    assert acc.current_device_name() == acc.device_name(index) or acc.device_type == "cpu"
    device = acc.device()
    assert isinstance(device, torch.device) and device.type == acc.device_type
    last = count - 1
    acc.set_device(last)
    try:
        assert acc.current_device() == last
        if acc.device_type != "cpu":
            assert acc.current_device_name() == f"{acc.device_type}:{last}"
            assert acc.device() == torch.device(acc.device_type, last)
    finally:
        acc.set_device(index)
    assert acc.synchronize() is None


@check
def rng(acc: Accelerator) -> None:
    state = acc.get_rng_state()
    assert isinstance(state, torch.Tensor) and state.dtype == torch.uint8
    acc.manual_seed(1234)
    assert acc.initial_seed() == 1234
    seeded = acc.get_rng_state()
    acc.manual_seed(99)
    assert not torch.equal(acc.get_rng_state(), seeded)
    acc.set_rng_state(seeded)
    assert torch.equal(acc.get_rng_state(), seeded)
    acc.manual_seed_all(7)
    assert acc.initial_seed() == 7
    assert isinstance(acc.default_generator(0), torch.Generator)
    assert acc.default_generator(0).initial_seed() == 7


@check
def streams(acc: Accelerator) -> None:
    if Capability.STREAMS not in acc.capabilities:
        assert acc.Stream is None and acc.current_stream() is None
        with acc.stream(None):
            pass
        return
    assert acc.Stream is not None
    side = acc.Stream()
    before = acc.current_stream()
    with acc.stream(side):
        assert acc.current_stream() == side
    assert acc.current_stream() == before
    assert acc.default_stream() == acc.default_stream(acc.current_device())


@check
def events(acc: Accelerator) -> None:
    if Capability.EVENTS not in acc.capabilities:
        assert acc.Event is None
        return
    assert acc.Event is not None
    start, end = acc.Event(enable_timing=True), acc.Event(enable_timing=True)
    start.record()
    end.record()
    end.synchronize()
    assert end.query() is True
    if Capability.EVENT_TIMING in acc.capabilities:
        assert start.elapsed_time(end) >= 0.0


@check
def memory(acc: Accelerator) -> None:
    figures = [
        acc.memory_allocated(),
        acc.max_memory_allocated(),
        acc.memory_reserved(),
        acc.max_memory_reserved(),
        acc.memory_cached(),
        acc.max_memory_cached(),
        acc.total_memory(),
        acc.available_memory(),
    ]
    assert all(type(f) is int and f >= 0 for f in figures), figures
    assert acc.max_memory_allocated() >= acc.memory_allocated()
    assert acc.total_memory() >= acc.available_memory()
    stats = acc.memory_stats()
    assert isinstance(stats, dict) and "allocated_bytes.all.current" in stats
    assert acc.reset_peak_memory_stats() is None
    assert acc.reset_max_memory_allocated() is None
    assert acc.empty_cache() is None


@check
def dtypes(acc: Accelerator) -> None:
    dtypes = acc.supported_dtypes()
    assert dtypes[0] == torch.float32
    assert (torch.float16 in dtypes) == acc.is_fp16_supported()
    assert (torch.bfloat16 in dtypes) == acc.is_bf16_supported()
    assert isinstance(acc.is_fp64_supported(), bool)


@check
def graphs(acc: Accelerator) -> None:
    graph = acc.create_graph()
    if Capability.GRAPHS not in acc.capabilities:
        assert graph is None
        with acc.capture_to_graph(graph):
            assert acc.is_current_stream_capturing() is False
        assert acc.replay_graph(graph) is None
        return
    assert graph is not None
    assert acc.is_current_stream_capturing() is False
    with acc.capture_to_graph(graph):
        pass
    assert acc.is_current_stream_capturing() is False
    assert acc.replay_graph(graph) is None


@check
def lazy_call(acc: Accelerator) -> None:
    ran: list[int] = []
    acc.lazy_call(lambda: ran.append(1))
    acc.current_device()  # initialises a lazily initialised runtime
    assert ran == [1], "lazy_call dropped the callback"


@check
def misc(acc: Accelerator) -> None:
    assert acc.range_push("accelhal") is None
    assert acc.range_pop() is None
    env: dict[str, str] = {}
    acc.set_visible_devices_envs(env, [0, 1])
    assert env == dict.fromkeys(acc.visible_devices_envs(), "0,1")
    assert all(isinstance(p, str) for p in acc.export_envs())
    assert acc.on_accelerator(torch.ones(1)) is (acc.device_type == "cpu")
    assert isinstance(acc.pin_memory_alignment(), int)
    assert acc.get_compile_backend() in ("inductor", "hpu_backend")


def run_checks(acc: Accelerator) -> dict[str, str]:
    """Run every check; ``{name: "ok"}`` or the failure with its traceback."""
    results = {}
    for name, func in CHECKS.items():
        try:
            func(acc)
            results[name] = "ok"
        except Exception:
            results[name] = "FAIL " + traceback.format_exc(limit=3)
    return results


def main() -> None:
    with contextlib.redirect_stdout(sys.stderr):
        acc = accelhal.get_accelerator()
        report = accelhal.detect()
        results = run_checks(acc)
    candidates = {c.name: {"status": c.status.value, "reason": c.reason} for c in report.candidates}
    print(json.dumps({"backend": acc.name, "rule": report.rule, "candidates": candidates, "results": results}))


if __name__ == "__main__":
    main()
