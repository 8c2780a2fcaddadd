"""Simulate a vendor's runtime, to test a device backend on a machine without its hardware.

:func:`write_vendor_package` writes a package named like the vendor's whose import registers a
simulated device module, as the real package does. Only module-level calls work (no tensors on
the device), and a process can simulate one vendor: run each in a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import textwrap
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from accelhal.contract.device_module import RANGE_MODULES
from accelhal.contract.spec import BackendSpec
from accelhal.process.settings import parse_count

SURFACES = Path(__file__).with_name("surfaces")
"""The recorded public surfaces of the vendors' device modules (JSON, one file per module)."""

DEVICES_VARIABLE = "ACCELHAL_SIMULATED_DEVICES"
"""How many devices a simulated runtime shows (default 2; ``0`` simulates "no device")."""

GIB = 1 << 30


@dataclass(frozen=True)
class Vendor:
    """How one vendor's package presents its device module (derived from its backend's spec)."""

    device_type: str
    package: str
    """The package a user imports (``torch_npu``); dotted for Gaudi."""
    module_attr: str | None
    """The package attribute holding the device module (``npu``); ``None``: the package is the module."""
    surface: str
    """The recorded surface file in :data:`SURFACES`."""
    graph_class: str | None
    rename_privateuse1: bool
    """False where torch knows the device type already (``hpu``)."""
    rng_namespace: str | None = None
    ranges: str | None = None
    """The module's profiler-range namespace (``cnpx``, ``brtx``), where it has one."""
    answers_cuda: bool = False
    """Whether importing the package sets its module's functions on ``torch.cuda`` (torch_supa)."""

    @classmethod
    def from_spec(cls, spec: BackendSpec) -> Vendor:
        """Return the simulation of ``spec``'s vendor package, its surface found by the module it records."""
        assert spec.package is not None and spec.module is not None
        surface = next(path.name for path in sorted(SURFACES.glob("*.json")) if _recorded_module(path) == spec.module)
        graph_class = f"{spec.device_type.upper()}Graph"
        accelerator = spec.load_class()
        return cls(
            device_type=spec.device_type,
            package=spec.package,
            module_attr=None if spec.module == spec.package else spec.module.rpartition(".")[2],
            surface=surface,
            graph_class=graph_class if graph_class in surface_names(surface) else None,
            rename_privateuse1=not _torch_knows(spec.device_type),
            rng_namespace=getattr(accelerator, "_rng_namespace", None),
            ranges=next((name for name in RANGE_MODULES if name in surface_names(surface)), None),
            answers_cuda=spec.package in ANSWERS_CUDA,
        )


ANSWERS_CUDA = frozenset({"torch_supa"})
"""Vendor packages whose import sets their module's functions on ``torch.cuda`` (read in torch_supa's source)."""


def _recorded_module(path: Path) -> str:
    module: str = json.loads(path.read_text())["module"]
    return module


def _torch_knows(device_type: str) -> bool:
    try:
        torch.device(device_type)
    except RuntimeError:
        return False
    return True


def _vendor_specs() -> dict[str, BackendSpec]:
    """Return the built-in backends whose device module comes from a vendor package (not torch itself)."""
    from accelhal.discovery import plugins
    from accelhal.process.settings import Settings

    registry = plugins.discover(Settings(disable_plugin_autoload=True))
    return {r.spec.name: r.spec for r in registry.ordered() if r.spec.package not in (None, "torch")}


def load_surface(filename: str) -> dict[str, dict[str, Any]]:
    """Return the recorded names of one surface file: ``{name: {"kind": ..., "methods"/"members": [...]}}``."""
    data = json.loads((SURFACES / filename).read_text())
    names: dict[str, dict[str, Any]] = data["names"]
    return names


def surface_names(filename: str) -> set[str]:
    """Return the top-level names of one surface file."""
    return set(load_surface(filename))


VENDORS: dict[str, Vendor] = {name: Vendor.from_spec(spec) for name, spec in _vendor_specs().items()}
"""The simulated vendors, by backend name (each built-in backend over a vendor package)."""


class SimulatedRuntime:
    """The state behind one simulated device module, and the calls tests use to move it."""

    def __init__(self, vendor: Vendor, devices: int) -> None:
        self.vendor = vendor
        self.devices = devices
        self.current = 0
        self.initialized = False
        self.queued: list[Callable[[], Any]] = []
        self.allocated = [0] * devices
        self.reserved = [0] * devices
        self.peak_allocated = [0] * devices
        self.peak_reserved = [0] * devices
        self.total = 32 * GIB
        self.generators = [torch.Generator() for _ in range(devices)]
        self.capturing = False
        self.registered: dict[int, int] = {}
        self.ranges: list[str] = []
        self.stream_class, self.event_class = self._stream_and_event()
        self.default_streams = [self.stream_class(i) for i in range(devices)]
        self.current_streams = list(self.default_streams)
        self.default_generators: tuple[torch.Generator, ...] = ()

    # ------------------------------------------------------------------ test controls
    def allocate(self, num_bytes: int, device: int | None = None) -> None:
        """Pretend tensors of ``num_bytes`` were allocated on ``device`` (current when ``None``)."""
        index = self.index(device)
        self.allocated[index] += num_bytes
        self.reserved[index] = max(self.reserved[index], self.allocated[index])
        self.peak_allocated[index] = max(self.peak_allocated[index], self.allocated[index])
        self.peak_reserved[index] = max(self.peak_reserved[index], self.reserved[index])

    def free(self, num_bytes: int, device: int | None = None) -> None:
        """Pretend ``num_bytes`` of tensors were freed (the cache keeps its reservation)."""
        index = self.index(device)
        self.allocated[index] = max(0, self.allocated[index] - num_bytes)

    # ------------------------------------------------------------------ helpers
    def index(self, device: Any = None) -> int:
        """Return a device argument, as torch.cuda-shaped modules accept it, as an index."""
        if device is None:
            return self.current
        if isinstance(device, str):
            device = torch.device(device)
        if isinstance(device, torch.device):
            return self.current if device.index is None else device.index
        index = int(device)
        if not 0 <= index < self.devices:
            raise RuntimeError(f"simulated {self.vendor.device_type}: invalid device ordinal {index}")
        return index

    def lazy_init(self) -> None:
        """Initialise once: create the default generators and run queued calls (as torch does)."""
        if self.initialized:
            return
        if self.devices == 0:
            raise RuntimeError(f"simulated {self.vendor.device_type}: no device is visible")
        self.initialized = True
        self.default_generators = tuple(self.generators)
        for module in self.modules:
            if hasattr(module, "default_generators"):
                setattr(module, "default_generators", self.default_generators)  # noqa: B010
        queued, self.queued = self.queued, []
        for call in queued:
            call()

    modules: list[types.ModuleType]

    def _stream_and_event(self) -> tuple[type[Any], type[Any]]:
        runtime = self

        class Stream:
            """A simulated stream: work on it is instantly complete."""

            def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
                self.device_index = runtime.index(device)
                self.priority = priority

            def query(self) -> bool:
                return True

            def synchronize(self) -> None:
                return None

            def wait_event(self, event: Any) -> None:
                return None

            def wait_stream(self, stream: Any) -> None:
                return None

            def record_event(self, event: Any = None) -> Any:
                event = Event() if event is None else event
                event.record(self)
                return event

        class Event:
            """A simulated event timed with the host clock."""

            def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
                self.enable_timing = enable_timing
                self.recorded_at: float | None = None

            def record(self, stream: Any = None) -> None:
                self.recorded_at = time.perf_counter()

            def query(self) -> bool:
                return self.recorded_at is not None

            def synchronize(self) -> None:
                return None

            def wait(self, stream: Any = None) -> None:
                return None

            def elapsed_time(self, end_event: Event) -> float:
                if not (self.enable_timing and end_event.enable_timing):
                    raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
                if self.recorded_at is None or end_event.recorded_at is None:
                    raise RuntimeError("Both events must be recorded before calculating elapsed time.")
                return (end_event.recorded_at - self.recorded_at) * 1000.0

        return Stream, Event

    # ------------------------------------------------------------------ the module's members
    def members(self) -> dict[str, Any]:
        """Return every function and class a torch.cuda-shaped module has, simulated; filtered by the surface later."""
        rt = self

        def current_device() -> int:
            rt.lazy_init()
            return rt.current

        def set_device(device: Any) -> None:
            rt.lazy_init()
            rt.current = rt.index(device)

        def synchronize(device: Any = None) -> None:
            rt.lazy_init()
            rt.index(device)

        def lazy_call(callable: Callable[[], Any], **kwargs: Any) -> None:
            if rt.initialized:
                callable()
            else:
                rt.queued.append(callable)

        class _Properties:
            def __init__(self, index: int) -> None:
                self.name = f"Simulated {rt.vendor.device_type.upper()} {index}"
                self.total_memory = rt.total
                self.major, self.minor = 9, 0

        def get_device_properties(device: Any = None) -> _Properties:
            rt.lazy_init()
            return _Properties(rt.index(device))

        def stat(values: list[int]) -> Callable[..., int]:
            def read(device: Any = None) -> int:
                return values[rt.index(device)]

            return read

        def memory_stats(device: Any = None) -> dict[str, int]:
            i = rt.index(device)
            return {
                "allocated_bytes.all.current": rt.allocated[i],
                "allocated_bytes.all.peak": rt.peak_allocated[i],
                "reserved_bytes.all.current": rt.reserved[i],
                "reserved_bytes.all.peak": rt.peak_reserved[i],
                "Limit": rt.total,
                "InUse": rt.allocated[i],
                "MaxInUse": rt.peak_allocated[i],
            }

        def reset_peak_memory_stats(device: Any = None) -> None:
            i = rt.index(device)
            rt.peak_allocated[i], rt.peak_reserved[i] = rt.allocated[i], rt.reserved[i]

        def empty_cache() -> None:
            rt.reserved = list(rt.allocated)

        def mem_get_info(device: Any = None) -> tuple[int, int]:
            return rt.total - rt.reserved[rt.index(device)], rt.total

        def generator(device: Any = None) -> torch.Generator:
            rt.lazy_init()
            return rt.generators[rt.index(device)]

        def manual_seed_all(seed: int) -> None:
            for gen in rt.generators:
                gen.manual_seed(seed)

        @contextlib.contextmanager
        def stream(stream: Any) -> Iterator[None]:  # the real modules' argument name
            if stream is None:
                yield
                return
            previous = rt.current_streams[stream.device_index]
            rt.current_streams[stream.device_index] = stream
            try:
                yield
            finally:
                rt.current_streams[stream.device_index] = previous

        def set_stream(s: Any) -> None:
            if s is not None:
                rt.current_streams[s.device_index] = s

        class Graph:
            """A simulated device graph: capture marks it, replay counts."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self.captured = False
                self.replays = 0

            def capture_begin(self, *args: Any, **kwargs: Any) -> None:
                rt.capturing = True

            def capture_end(self) -> None:
                rt.capturing = False
                self.captured = True

            def replay(self) -> None:
                if not self.captured:
                    raise RuntimeError("replay() of a graph that was never captured")
                self.replays += 1

            def reset(self) -> None:
                self.captured = False

            def pool(self) -> tuple[int, int]:
                return (0, id(self))

        @contextlib.contextmanager
        def graph(g: Graph, pool: Any = None, stream: Any = None, **kwargs: Any) -> Iterator[None]:
            g.capture_begin()
            try:
                yield
            finally:
                g.capture_end()

        def host_runtime() -> Any:
            def register(address: int, num_bytes: int, flags: int = 0) -> int:
                rt.registered[address] = num_bytes
                return 0

            def unregister(address: int) -> int:
                return 0 if rt.registered.pop(address, None) is not None else 1

            return types.SimpleNamespace(npuHostRegister=register, npuHostUnregister=unregister)

        ranges = types.SimpleNamespace(range_push=rt.ranges.append, range_pop=lambda: rt.ranges.pop())
        rng = {
            "get_rng_state": lambda device=None: generator(device).get_state(),
            "set_rng_state": lambda new_state, device=None: generator(device).set_state(new_state),
            "manual_seed": lambda seed: generator().manual_seed(seed),
            "manual_seed_all": manual_seed_all,
            "seed": lambda: generator().seed(),
            "initial_seed": lambda: generator().initial_seed(),
            "default_generators": (),
        }
        members: dict[str, Any] = {
            "device_count": lambda: rt.devices,
            "is_available": lambda: rt.devices > 0,
            "is_initialized": lambda: rt.initialized,
            "init": rt.lazy_init,
            "_lazy_init": rt.lazy_init,
            "_lazy_call": lazy_call,
            "current_device": current_device,
            "set_device": set_device,
            "synchronize": synchronize,
            "get_device_properties": get_device_properties,
            "get_device_name": lambda device=None: get_device_properties(device).name,
            "get_device_capability": lambda device=None: (9, 0),
            "is_bf16_supported": lambda including_emulation=False: True,
            "memory_allocated": stat(rt.allocated),
            "max_memory_allocated": stat(rt.peak_allocated),
            "memory_reserved": stat(rt.reserved),
            "max_memory_reserved": stat(rt.peak_reserved),
            "memory_cached": stat(rt.reserved),
            "max_memory_cached": stat(rt.peak_reserved),
            "memory_stats": memory_stats,
            "reset_peak_memory_stats": reset_peak_memory_stats,
            "reset_max_memory_allocated": reset_peak_memory_stats,
            "reset_max_memory_cached": reset_peak_memory_stats,
            "empty_cache": empty_cache,
            "mem_get_info": mem_get_info,
            "Stream": self.stream_class,
            "Event": self.event_class,
            "stream": stream,
            "set_stream": set_stream,
            "current_stream": lambda device=None: rt.current_streams[rt.index(device)],
            "default_stream": lambda device=None: rt.default_streams[rt.index(device)],
            "graph": graph,
            "is_current_stream_capturing": lambda: rt.capturing,
            "npurt": host_runtime,
        }
        if self.vendor.ranges is not None:
            members[self.vendor.ranges] = ranges
        if self.vendor.graph_class is not None:
            members[self.vendor.graph_class] = Graph
        if self.vendor.rng_namespace is None:
            members.update(rng)
        else:
            members[self.vendor.rng_namespace] = rng
        return members


RUNTIME: SimulatedRuntime | None = None
"""The simulated runtime of this process, once a simulated vendor package was imported."""


def _module(name: str, members: dict[str, Any], allowed: dict[str, dict[str, Any]]) -> types.ModuleType:
    module = types.ModuleType(name, "Simulated by accelhal.testing.simulated (module-level calls only, no tensors).")
    for member, value in members.items():
        if member not in allowed:
            continue
        if isinstance(value, dict):
            value = _module(f"{name}.{member}", value, {m: {} for m in allowed[member].get("members", [])})
        elif isinstance(value, (types.FunctionType, type)):
            value.__module__ = name  # the vendor's functions belong to its module
        setattr(module, member, value)
    return module


def answer_cuda(module: types.ModuleType) -> None:
    """Set ``module``'s functions on ``torch.cuda``, as torch_supa's ``transfer_to_supa`` does."""
    for member, value in vars(module).items():
        if not member.startswith("__") and hasattr(torch.cuda, member):
            setattr(torch.cuda, member, value)


def vendor_module(vendor: Vendor, members: dict[str, Any], module_name: str | None = None) -> types.ModuleType:
    """Return the device module of ``vendor``: those of ``members`` that its recorded surface has.

    ``module_name`` is given where the package is the device module (Gaudi's hpu,
    torch_musa): the module then takes the package's identity (its spec, file and path).
    """
    name = module_name or f"{vendor.package}.{vendor.module_attr}"
    module = _module(name, members, load_surface(vendor.surface))
    package = sys.modules.get(name) if module_name else None
    if package is not None:
        for attr in ("__spec__", "__file__", "__loader__", "__path__"):
            if hasattr(package, attr):
                setattr(module, attr, getattr(package, attr))
        module.__version__ = "0.0+simulated"  # type: ignore[attr-defined]
    return module


def install(vendor_name: str, module_name: str | None = None) -> types.ModuleType:
    """Create and register the simulated device module of ``vendor_name`` (called by the written package)."""
    global RUNTIME
    vendor = VENDORS[vendor_name]
    devices = parse_count(DEVICES_VARIABLE, os.environ.get(DEVICES_VARIABLE), 2)
    runtime = SimulatedRuntime(vendor, devices)
    module = vendor_module(vendor, runtime.members(), module_name)
    runtime.modules = [module]
    if vendor.rng_namespace is not None:
        runtime.modules.append(getattr(module, vendor.rng_namespace))
    from torch.utils.backend_registration import rename_privateuse1_backend

    if vendor.rename_privateuse1:
        rename_privateuse1_backend(vendor.device_type)
    register: Callable[[str, types.ModuleType], None] = torch._register_device_module
    register(vendor.device_type, module)
    if vendor.answers_cuda:
        answer_cuda(module)
    RUNTIME = runtime
    return module


def _package_source(vendor_name: str, vendor: Vendor, installer: str) -> str:
    if vendor.module_attr is None:
        return f"""
            import sys
            from {installer} import install
            sys.modules[__name__] = install({vendor_name!r}, module_name=__name__)
            """
    return f"""
        from {installer} import install
        __version__ = "0.0+simulated"
        {vendor.module_attr} = install({vendor_name!r})
        """


def _write_package(root: Path, dotted: str, source: str) -> None:
    parts = dotted.split(".")
    for depth in range(1, len(parts)):
        parent = root.joinpath(*parts[:depth])
        parent.mkdir(parents=True, exist_ok=True)
        (parent / "__init__.py").touch()
    package = root.joinpath(*parts)
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""Written by accelhal.testing.simulated."""\n' + textwrap.dedent(source))


def write_vendor_package(vendor_name: str, root: Path, installer: str = __name__) -> Path:
    """Write the simulated package of ``vendor_name`` (a key of :data:`VENDORS`, e.g. ``"npu"``) under ``root``.

    Put ``root`` on ``sys.path`` (``PYTHONPATH``) and ``importlib.util.find_spec`` finds the
    package; importing it calls ``<installer>.install(vendor_name)`` (this module's
    :func:`install` by default; ``module_name=__name__`` where the package is the device
    module), which registers the device module through ``torch.utils.rename_privateuse1_backend``
    and ``torch._register_device_module`` and returns it. A process can rename torch's
    PrivateUse1 backend once, so simulate one vendor per process.

    What works: device counting and selection, synchronisation, streams, events with timing,
    RNG (real CPU generators per device), memory counters (moved with
    :meth:`SimulatedRuntime.allocate`/:meth:`~SimulatedRuntime.free`), graph capture and
    replay counts, lazy calls, host registration. What does not: tensors on the simulated
    device (``torch.ones(2, device="npu")`` fails). The module carries only the names the
    vendor's real module has (:func:`surface_names`), so a backend calling a function the real
    module lacks fails against the simulation too.

    Example::

        root = write_vendor_package("npu", tmp_path)          # tmp_path/torch_npu/__init__.py
        subprocess.run([sys.executable, "-c", "import accelhal; print(accelhal.get_accelerator().name)"],
                       env={**os.environ, "PYTHONPATH": str(root)})   # prints "npu"
    """
    vendor = VENDORS[vendor_name]
    _write_package(root, vendor.package, _package_source(vendor_name, vendor, installer))
    return root


def write_broken_package(package: str, root: Path, error: str) -> Path:
    """Write a package whose import raises ``ImportError(error)``, as a vendor stack without its libraries does.

    >>> write_broken_package("torch_npu", tmp, "libhccl.so: cannot open shared object file")  # doctest: +SKIP
    """
    _write_package(root, package, f"raise ImportError({error!r})\n")
    return root
