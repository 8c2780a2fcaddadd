"""Vendor packages over the test device: accelhal's vendor backends acting on real tensors.

:func:`write_vendor_package` writes a package named like a vendor's (``torch_npu``,
``torch_mlu``, ``torch_sdaa``, ``torch_supa``, ``torch_musa``). Importing it loads the test
device renamed to the vendor's device type (``npu``) and registers as ``torch.<type>`` a
device module shaped as the vendor's: of the members below, those the vendor's recorded
surface (``accelhal/testing/surfaces/``) has, belonging to the vendor's module, as
:mod:`accelhal.testing.simulated` lays them out. accelhal then selects its named backend
for the vendor (not the generic one), and every member it calls acts on the device:

* devices, context creation, synchronisation and RNG: the test device's own module
  (:mod:`tests.privateuse1.runtime`);
* memory figures: ``torch.accelerator``'s, which read the device's allocator, so they
  move with real allocations;
* streams and events: the device's (through its guard), as a ``Stream`` subclass of
  ``torch.Stream`` and an ``Event`` holding a ``torch.Event``;
* profiler ranges (``cnpx``, ``brtx``): ``torch.autograd.profiler.record_function`` ranges;
* host registration (``torch.npu.npurt()``): ``mlock``/``munlock`` of the host range;
* collectives: the vendor's communication backend (``hccl``) registered with
  ``torch.distributed`` for the device type, as the vendor's package does, served by
  gloo through host copies (:mod:`tests.privateuse1.collectives`).

What the device does not have is absent, as it would be from a vendor's module without
it: graphs (``NPUGraph``, ``graph``), ``get_device_capability`` (no compute
capability) and ``_lazy_call`` (the device creates its context in C++, where a Python
queue would never run).

Vendors whose device type torch already knows (Gaudi's ``hpu``) cannot be served: the
PrivateUse1 device cannot take a built-in name. One vendor per process, like the rename.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import importlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from accelhal.contract.device_module import RANGE_MODULES
from accelhal.testing import simulated
from tests.privateuse1 import collectives, runtime
from tests.privateuse1 import device as testdev

VENDORS = sorted(name for name, vendor in simulated.VENDORS.items() if vendor.rename_privateuse1)
"""The vendor backends the test device can serve: those whose device type PrivateUse1 can be renamed to."""

RUNTIME_MEMBERS = (*runtime.__all__, "_lazy_init", "_is_in_bad_fork")
"""The test device module's own members, as they are."""


@dataclass(frozen=True)
class DeviceProperties:
    """What ``get_device_properties`` returns: the device's name and memory."""

    name: str
    total_memory: int


def write_vendor_package(vendor_name: str, root: Path) -> Path:
    """Write the package of ``vendor_name`` (one of :data:`VENDORS`) under ``root``; importing it loads the device."""
    return simulated.write_vendor_package(vendor_name, root, installer=__name__)


def install(vendor_name: str, module_name: str | None = None) -> types.ModuleType:
    """Load the test device as ``vendor_name``'s device type with the vendor's module (called by the package)."""
    vendor = simulated.VENDORS[vendor_name]
    module = simulated.vendor_module(vendor, members(vendor.device_type), module_name)
    module.__doc__ = f"The accelhal test device, shaped as {vendor.package}'s device module."
    testdev.load(vendor.device_type, module=module)
    if hasattr(module, "default_generators"):  # the device's generators exist once its library is loaded
        module.default_generators = runtime.__getattr__("default_generators")
    if vendor.answers_cuda:
        simulated.answer_cuda(module)
    spec = getattr(importlib.import_module("accelhal_backends.catalog"), vendor_name.upper())
    collectives.register(vendor.device_type, spec.comm_backend)
    return module


def _index(device: Any) -> int:
    return runtime._index(device)


def _memory_figure(name: str) -> Callable[..., int]:
    figure = getattr(torch.accelerator, name)

    def read(device: Any = None) -> int:
        return int(figure(_index(device)))

    read.__name__ = name
    return read


def _memory(device_type: str) -> dict[str, Any]:
    figures = {
        name: _memory_figure(name)
        for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved")
    }

    def memory_stats(device: Any = None) -> dict[str, Any]:
        return dict(torch.accelerator.memory_stats(_index(device)))

    def reset_peak_memory_stats(device: Any = None) -> None:
        torch.accelerator.reset_peak_memory_stats(_index(device))

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        free, total = torch.accelerator.get_memory_info(_index(device))
        return int(free), int(total)

    def get_device_properties(device: Any = None) -> DeviceProperties:
        index = _index(device)
        return DeviceProperties(f"accelhal test device {device_type}:{index}", mem_get_info(index)[1])

    return {
        **figures,
        "memory_cached": figures["memory_reserved"],
        "max_memory_cached": figures["max_memory_reserved"],
        "memory_stats": memory_stats,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_max_memory_allocated": reset_peak_memory_stats,
        "reset_max_memory_cached": reset_peak_memory_stats,
        "empty_cache": lambda: torch.accelerator.empty_cache(),
        "mem_get_info": mem_get_info,
        "get_device_properties": get_device_properties,
        "get_device_name": lambda device=None: get_device_properties(device).name,
        "is_bf16_supported": lambda including_emulation=True: (
            torch.bfloat16 in torch.accelerator.get_device_capability(runtime.current_device())["supported_dtypes"]
        ),
    }


class Stream(torch.Stream):
    """A stream of the device (``torch.Stream`` with the vendor's constructor: ``Stream(device, priority)``)."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Stream:
        if kwargs:  # stream_id, device_index, device_type: an existing stream
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=device, priority=priority)

    def wait_event(self, event: Any) -> None:
        super().wait_event(getattr(event, "device_event", event))

    def record_event(self, event: Any = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event  # type: ignore[no-any-return]


def _as_vendor_stream(stream: torch.Stream) -> Stream:
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)


class Event:
    """An event of the device (a ``torch.Event``; torch's ``elapsed_time`` accepts no subclass of it)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.device_event = torch.Event(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    def record(self, stream: Any = None) -> None:
        self.device_event.record(stream)

    def wait(self, stream: Any = None) -> None:
        self.device_event.wait(stream)

    def query(self) -> bool:
        return bool(self.device_event.query())

    def synchronize(self) -> None:
        self.device_event.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        return float(self.device_event.elapsed_time(end_event.device_event))


def _streams() -> dict[str, Any]:
    def current_stream(device: Any = None) -> Stream:
        return _as_vendor_stream(torch.accelerator.current_stream(_index(device)))

    def default_stream(device: Any = None) -> Stream:  # stream 0 is each device's default stream
        index = _index(device)
        kind = torch.accelerator.current_stream(index).device_type
        return Stream(stream_id=0, device_index=index, device_type=kind)

    @contextlib.contextmanager
    def stream(stream: Any) -> Iterator[None]:
        if stream is None:
            yield
            return
        previous = torch.accelerator.current_stream(stream.device_index)
        torch.accelerator.set_stream(stream)
        try:
            yield
        finally:
            torch.accelerator.set_stream(previous)

    return {
        "Stream": Stream,
        "Event": Event,
        "current_stream": current_stream,
        "default_stream": default_stream,
        "set_stream": lambda stream: torch.accelerator.set_stream(stream),
        "stream": stream,
        "is_current_stream_capturing": lambda: False,  # the device has no graphs
    }


def _ranges() -> dict[str, Any]:
    opened: list[torch.autograd.profiler.record_function] = []

    def range_push(msg: str) -> int:
        scope = torch.autograd.profiler.record_function(msg)
        scope.__enter__()
        opened.append(scope)
        return len(opened) - 1

    def range_pop() -> int:
        opened.pop().__exit__(None, None, None)
        return len(opened)

    return {"range_push": range_push, "range_pop": range_pop}


def _host_runtime() -> types.SimpleNamespace:
    """``npurt()``: ``npuHostRegister``/``npuHostUnregister`` as page locking (0, else the errno)."""
    libc = ctypes.CDLL(None, use_errno=True)
    locked: dict[int, int] = {}

    def register(address: int, num_bytes: int, flags: int = 0) -> int:
        if libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(num_bytes)) != 0:
            return ctypes.get_errno()
        locked[address] = num_bytes
        return 0

    def unregister(address: int) -> int:
        if address not in locked:
            return errno.EINVAL
        if libc.munlock(ctypes.c_void_p(address), ctypes.c_size_t(locked.pop(address))) != 0:
            return ctypes.get_errno()
        return 0

    return types.SimpleNamespace(npuHostRegister=register, npuHostUnregister=unregister)


def members(device_type: str) -> dict[str, Any]:
    """Every member a vendor's device module may have that the test device serves (filtered by the surface later)."""
    found: dict[str, Any] = {name: getattr(runtime, name) for name in RUNTIME_MEMBERS}
    found["default_generators"] = ()  # set by install() once the device is loaded
    found.update(_memory(device_type))
    found.update(_streams())
    found.update(dict.fromkeys(RANGE_MODULES, _ranges()))
    host_runtime = _host_runtime()
    found["npurt"] = lambda: host_runtime
    return found
