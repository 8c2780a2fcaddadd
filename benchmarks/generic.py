"""The generic backend's members against the direct ``torch.accelerator`` or device-module call.

The device is the test tree's out-of-tree PrivateUse1 device (``tests/privateuse1``, a C++
extension built once into its cache), loaded as ``testdev`` in a child process: torch
renames PrivateUse1 once per process, and the suite's own process keeps its cpu backend.
Each member is timed as ``acc.<member>(...)`` against the call code would make without
accelhal, spelled as users spell it (``torch.accelerator.current_device_index()``,
``torch.testdev.get_rng_state()``, ``torch.Stream`` ...); the method and the limit are those
of :mod:`benchmarks.members`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.members import Pair, time_pairs
from benchmarks.method import Method
from benchmarks.results import SuiteResult, Target

ROOT = Path(__file__).resolve().parent.parent
DEVICE = "testdev"


def _pair(member: str, uses: int, accelhal: str, direct: str, kind: str = "torch") -> Pair:
    return Pair(member, uses, accelhal, {DEVICE: direct}, {DEVICE: kind})


PAIRS: tuple[Pair, ...] = (
    _pair(
        "current_device_name", 147, "acc.current_device_name()", "f'testdev:{torch.accelerator.current_device_index()}'"
    ),
    _pair("current_device", 58, "acc.current_device()", "torch.accelerator.current_device_index()"),
    _pair("current_stream", 49, "acc.current_stream()", "torch.accelerator.current_stream()"),
    _pair("synchronize", 40, "acc.synchronize()", "torch.accelerator.synchronize()"),
    _pair("stream", 36, "with acc.stream(side): pass", "with side: pass"),
    _pair("on_accelerator", 31, "acc.on_accelerator(x)", "on_device(x)", "expression"),
    _pair("pin_memory", 29, "acc.pin_memory(host)", "host.pin_memory()"),
    _pair("empty_cache", 21, "acc.empty_cache()", "torch.accelerator.empty_cache()"),
    _pair("Event", 19, "acc.Event", "torch.Event", "attribute"),
    _pair("memory_allocated", 15, "acc.memory_allocated()", "torch.accelerator.memory_allocated()"),
    _pair("Stream", 14, "acc.Stream", "torch.Stream", "attribute"),
    _pair("is_available", 12, "acc.is_available()", "torch.accelerator.is_available()"),
    _pair("get_rng_state", 11, "acc.get_rng_state()", "torch.testdev.get_rng_state()"),
    _pair("max_memory_allocated", 11, "acc.max_memory_allocated()", "torch.accelerator.max_memory_allocated()"),
    _pair("FloatTensor", 11, "acc.FloatTensor(data)", "torch.tensor(data, dtype=torch.float32, device='testdev')"),
    _pair("device_count", 9, "acc.device_count()", "torch.accelerator.device_count()"),
    _pair("set_device", 9, "acc.set_device(0)", "torch.accelerator.set_device_index(0)"),
    _pair("manual_seed", 8, "acc.manual_seed(7)", "torch.testdev.manual_seed(7)"),
    _pair("memory_reserved", 5, "acc.memory_reserved()", "torch.accelerator.memory_reserved()"),
    _pair(
        "total_memory",
        4,
        "acc.total_memory()",
        "torch.accelerator.get_memory_info(torch.accelerator.current_device_index())[1]",
    ),
)
"""The members of :data:`benchmarks.members.PAIRS` that reach the device, and the other device calls."""

CHILD = "from benchmarks.generic import child; child()"


def namespace(acc: Any) -> dict[str, Any]:
    """What the statements of :data:`PAIRS` refer to."""
    import torch

    def on_device(t: torch.Tensor) -> bool:
        return t.device.type == DEVICE

    return {
        "acc": acc,
        "torch": torch,
        "x": torch.ones(16, device=DEVICE),
        "host": torch.ones(256),
        "data": [1.0, 2.0, 3.0, 4.0],
        "side": torch.Stream(device=DEVICE),
        "on_device": on_device,
    }


def child() -> None:
    """In the child: load the device, select the generic backend, time the pairs, print the result as JSON."""
    from tests.privateuse1 import device

    device.load(DEVICE)
    import accelhal

    acc = accelhal.get_accelerator()
    if acc.name != DEVICE:
        raise RuntimeError(f"the generic backend for {DEVICE!r} was not selected, {acc.name!r} was")
    method = Method(**json.loads(os.environ["ACCELHAL_BENCH_METHOD"]))
    result = time_pairs(PAIRS, namespace(acc), DEVICE, method, time.process_time)
    print(json.dumps(result.as_dict()))


def run(method: Method) -> SuiteResult:
    """Time every pair in a child process where the test device is the accelerator."""
    env = {**os.environ, "ACCELHAL_BENCH_METHOD": json.dumps(dataclasses.asdict(method)), "PYTHONPATH": str(ROOT)}
    env.pop("ACCELHAL_ACCELERATOR", None)
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the generic members child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    data.pop("suite", None)
    targets = [Target.from_dict(t) for t in data.pop("targets")]
    data["title"] = f"The generic backend on the test device ({DEVICE}): accelhal vs the direct call (ns per call)"
    return SuiteResult(suite="generic", targets=targets, **data)
