"""The cuda backend on a real GPU: run on the GPU machine with ``python3 -m pytest -m cuda -q``.

Skipped (with the reason) where no CUDA device is visible. Detection and fork safety run in
fresh subprocesses, because this process initialises CUDA in the other tests.
"""

from __future__ import annotations

import ctypes
import importlib.util
import mmap
import os
import subprocess
import sys

import pytest
import torch

import accelhal
from accelhal.contract.accelerator import Accelerator
from accelhal_backends.cuda.accelerator import CudaAccelerator

pytestmark = pytest.mark.cuda

MIB = 1 << 20


@pytest.fixture
def acc() -> Accelerator:
    accelerator = accelhal.get_accelerator()
    assert isinstance(accelerator, CudaAccelerator)
    return accelerator


def run(code: str, **env: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ, **env}
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


FORK_AFTER_DETECTION = """
import os, torch, accelhal
report = accelhal.detect()
print(report.chosen, report.rule, torch.cuda.is_initialized())
pid = os.fork()
if pid == 0:
    try:
        x = torch.arange(4.0, device="cuda")
        ok = (x * 2).sum().item() == 12.0
    except BaseException:
        ok = False
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_detection_selects_cuda_without_a_context_and_a_forked_child_computes() -> None:
    first, second = run(FORK_AFTER_DETECTION).splitlines()[-2:]
    assert first == "cuda priority False"
    assert second == "0"


def test_identity_and_devices(acc: Accelerator) -> None:
    count = torch.cuda.device_count()
    assert acc.name == "cuda" and acc.device_count() == count >= 1 and acc.is_available()
    index = acc.current_device()
    assert type(index) is int and index == torch.cuda.current_device()
    assert acc.current_device_name() == f"cuda:{index}"
    assert acc.device() == torch.device("cuda", index)
    major, minor = torch.cuda.get_device_capability(index)
    assert acc.device_capability(index) == f"{major}.{minor}"
    assert acc.device_description(index).startswith(torch.cuda.get_device_name(index))
    assert acc.communication_backend_name() == "nccl"
    assert acc.is_fp16_supported() is (major >= 7)
    assert acc.is_bf16_supported() is (major >= 8)
    assert acc.is_triton_supported() is (major >= 8 and importlib.util.find_spec("triton") is not None)
    versions = acc.vendor_versions()
    runtime = {"hip": torch.version.hip} if torch.version.hip else {"cuda": torch.version.cuda}
    assert runtime.items() <= versions.items() and versions["flavour"].startswith(("NVIDIA CUDA", "AMD ROCm"))
    acc.set_device(count - 1)
    assert torch.cuda.current_device() == count - 1
    acc.set_device(index)
    assert acc.synchronize() is None and acc.synchronize(index) is None


def test_rng_state_round_trip(acc: Accelerator) -> None:
    state = acc.get_rng_state()
    first = torch.rand(16, device="cuda")
    acc.set_rng_state(state)
    assert torch.equal(torch.rand(16, device="cuda"), first)
    acc.manual_seed(2024)
    assert acc.initial_seed() == 2024
    seeded = torch.rand(16, device="cuda")
    acc.manual_seed_all(2024)
    assert torch.equal(torch.rand(16, device="cuda"), seeded)
    assert acc.default_generator(0) is torch.cuda.default_generators[0]


def test_streams_and_events_with_timing(acc: Accelerator) -> None:
    side = acc.Stream()
    assert acc.default_stream() == torch.cuda.default_stream()
    x = torch.randn(2048, 2048, device="cuda")
    start, end = acc.Event(enable_timing=True), acc.Event(enable_timing=True)
    side.wait_stream(acc.current_stream())
    with acc.stream(side):
        assert acc.current_stream() == side
        start.record()
        y = x @ x
        end.record()
    assert acc.current_stream() != side
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0.0
    acc.current_stream().wait_stream(side)
    torch.testing.assert_close(y, x @ x)


def test_captured_cuda_graph_replays_with_the_right_result(acc: Accelerator) -> None:
    static_in = torch.ones(1024, device="cuda")
    warmup = acc.Stream()
    warmup.wait_stream(acc.current_stream())
    with acc.stream(warmup):
        static_out = static_in * 2 + 1
    acc.current_stream().wait_stream(warmup)
    graph = acc.create_graph()
    assert isinstance(graph, torch.cuda.CUDAGraph)
    assert acc.is_current_stream_capturing() is False
    capturing = []
    with acc.capture_to_graph(graph):
        capturing.append(acc.is_current_stream_capturing())
        static_out = static_in * 2 + 1
    assert capturing == [True]
    static_in.copy_(torch.arange(1024.0, device="cuda"))
    acc.replay_graph(graph)
    acc.synchronize()
    torch.testing.assert_close(static_out, torch.arange(1024.0, device="cuda") * 2 + 1)


def test_memory_figures_move_with_allocation_and_free(acc: Accelerator) -> None:
    acc.empty_cache()
    acc.reset_peak_memory_stats()
    before = acc.memory_allocated()
    free_before = acc.available_memory()
    block = torch.empty(256 * MIB, dtype=torch.uint8, device="cuda")
    allocated = acc.memory_allocated()
    assert allocated >= before + 256 * MIB
    assert acc.max_memory_allocated() >= allocated
    assert acc.memory_reserved() >= allocated and acc.max_memory_reserved() >= allocated
    assert acc.memory_stats()["allocated_bytes.all.current"] == allocated
    assert acc.available_memory() <= free_before - 256 * MIB  # the driver's figure
    del block
    assert acc.memory_allocated() == before
    assert acc.max_memory_allocated() >= allocated
    acc.reset_peak_memory_stats()
    assert acc.max_memory_allocated() == before
    acc.empty_cache()
    total = acc.total_memory()
    assert total == torch.cuda.get_device_properties(acc.current_device()).total_memory
    assert 0 < acc.available_memory() <= total


AVAILABLE_WITH_UUID = """
import accelhal
acc = accelhal.get_accelerator()
print(acc.name, acc.device_count(), acc.available_memory() > 0, acc.available_memory(0) > 0)
"""


def test_available_memory_with_a_uuid_in_cuda_visible_devices() -> None:
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    visible = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
    assert run(AVAILABLE_WITH_UUID, CUDA_VISIBLE_DEVICES=visible).splitlines()[-1] == "cuda 1 True True"


def test_pinning(acc: Accelerator) -> None:
    host = torch.arange(64.0)
    pinned = acc.pin_memory(host)
    assert pinned.is_pinned() and acc.is_pinned(pinned) and torch.equal(pinned, host)
    assert acc.is_pinned(host) is False
    fresh = acc.pin_memory(host.view(8, 8), make_copy=False, match_shape=False)
    assert fresh.shape == (64,) and acc.is_pinned(fresh)
    empty = acc.pin_empty(4, 8, dtype=torch.float16)
    assert empty.shape == (4, 8) and empty.dtype == torch.float16 and acc.is_pinned(empty)
    like = acc.pin_empty_like(host.view(8, 8))
    assert like.shape == (8, 8) and acc.is_pinned(like)
    on_device = pinned.to("cuda", non_blocking=True)
    acc.synchronize()
    assert acc.on_accelerator(on_device) and torch.equal(on_device.cpu(), host)


def test_host_memory_registration(acc: Accelerator) -> None:
    size = 4 * MIB
    buffer = mmap.mmap(-1, size)  # page-aligned anonymous memory
    address = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    view = torch.frombuffer(buffer, dtype=torch.uint8)
    assert view.is_pinned() is False
    assert acc.register_host_memory(address, size) is True
    assert view.is_pinned() is True
    view.fill_(7)
    assert int(view.to("cuda").sum().item()) == 7 * size
    acc.unregister_host_memory(address)
    assert view.is_pinned() is False
    del view


def test_tensor_factories_ranges_and_lazy_call(acc: Accelerator) -> None:
    assert acc.FloatTensor([1, 2]).device.type == "cuda"
    assert acc.HalfTensor([1]).dtype == torch.float16 and acc.LongTensor([1]).dtype == torch.int64
    acc.range_push("accelhal")
    acc.range_pop()
    ran: list[int] = []
    assert acc.lazy_call(lambda: ran.append(1)) is None
    assert ran == [1]  # CUDA is initialised by now, so the callback ran at once
