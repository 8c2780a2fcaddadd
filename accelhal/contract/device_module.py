"""Implement the whole contract once over a torch.cuda-shaped device module: :class:`DeviceModuleAccelerator`.

A backend over ``torch.cuda``, ``torch.xpu``, ``torch.npu`` and their like is one
:meth:`~accelhal.BackendSpec.for_device_module` declaration, with no class of its own unless its
behaviour differs. Constructing the accelerator never initialises the device runtime.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_index
from accelhal.contract.probes import import_device_module
from accelhal.contract.spec import Capability

if TYPE_CHECKING:
    _T = TypeVar("_T")  # a type variable of annotations only: creating it costs the first call
_V = TypeVar("_V")

DEVICE_CAPABILITIES: frozenset[Capability] = frozenset(
    {
        Capability.STREAMS,
        Capability.EVENTS,
        Capability.EVENT_TIMING,
        Capability.PINNING,
        Capability.DEVICE_MEMORY_STATS,
    }
)
"""What every torch.cuda-shaped runtime has; backends add graphs, ranges, host registration."""


class PerIndex(dict[Any, _V]):
    """``index -> make(index)``, built (and validated) on first use: later lookups are one dict read."""

    def __init__(self, make: Callable[[int], _V]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, index: Any) -> _V:
        value = self.make(check_device_index(index))
        if type(index) is int:
            self[index] = value
        return value


def _module_function(name: str, namespace: str = "_m") -> Any:
    """Return a member that is the device module's function ``name`` (bound on each instance by ``__init__``).

    The body runs only where the instance binding does not exist (the method called
    through the class): it forwards to the same function with the same arguments.
    """

    def member(self: DeviceModuleAccelerator, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(self, namespace), name)(*args, **kwargs)

    contract = getattr(Accelerator, name)
    member.__name__ = member.__qualname__ = name
    member.__doc__ = f"{inspect.getdoc(contract)} The device module's ``{name}``, called directly."
    member.__wrapped__ = contract  # type: ignore[attr-defined]  # inspect.signature gives the contract's arguments
    member._accelhal_module_function = namespace  # type: ignore[attr-defined]
    return member


LOOKED_FOR = (
    "mem_get_info",
    "get_device_name",
    "get_device_capability",
    "_lazy_call",
    "is_current_stream_capturing",
    "graph",
)
"""Module functions used only where the module has them (their absence changes a member's answer)."""

RANGE_MODULES = ("nvtx", "cnpx", "brtx")
"""Submodules that provide profiler ranges (``range_push``/``range_pop``), in the order looked for."""


def default_streams(current_stream: Callable[[int], Any]) -> PerIndex[Any]:
    """Return ``index -> default stream`` for a runtime without ``default_stream`` (``torch.xpu``, ...).

    A thread's current stream starts as the device's default stream, so each device's is
    read once, as ``current_stream(index)`` in a new thread.
    """

    def read(index: int) -> Any:
        found: list[Any] = []
        failed: list[BaseException] = []

        def run() -> None:
            try:
                found.append(current_stream(index))
            except BaseException as exc:  # re-raised in the caller's thread
                failed.append(exc)

        reader = threading.Thread(target=run)
        reader.start()
        reader.join()
        if failed:
            raise failed[0]
        return found[0]

    return PerIndex(read)


class DeviceModuleAccelerator(Accelerator):
    """The contract over a torch.cuda-shaped device module, named by the backend's spec.

    Construction imports the vendor package and the device module (a missing or broken one
    raises :class:`~accelhal.BackendUnavailableError` naming the package) and looks at what the
    module has, never initialising the runtime; :attr:`capabilities` reports what it found.
    Where the module lacks a function a member falls back (without ``mem_get_info`` available
    memory is total minus allocated; without ``_lazy_call`` a callback runs at once; graphs and
    profiler ranges only where the module has them). Members take the arguments torch's take;
    a ``device_index`` of ``None`` is not passed on (runtimes such as Gaudi's take none there).

    Example::

        SPEC = BackendSpec.for_device_module(
            "npu", priority=800, package="torch_npu", comm_backend="hccl",
            visible_devices_envs=("ASCEND_RT_VISIBLE_DEVICES",), hint="source CANN's set_env.sh",
        )
    """

    _vendor_package: ClassVar[str] = "torch"
    """The package imported first (it registers the device module); read from the spec's ``package``."""
    _module_name: ClassVar[str] = ""
    """The dotted device module; read from the spec's ``module``."""
    _install_hint: ClassVar[str] = ""
    """What to do when the vendor package is missing or broken; read from the spec's ``hint``."""
    _rng_namespace: ClassVar[str | None] = None
    """Attribute of the module holding the RNG functions (``"random"`` on Gaudi); ``None``: the module."""
    _graph_class: ClassVar[str] = ""
    """The module's graph class; empty: ``<DEVICE_TYPE>Graph`` where the module has one."""
    _bf16_excludes_emulation: ClassVar[bool] = False
    """Whether ``is_bf16_supported`` takes ``including_emulation`` (passed False: emulation does not count)."""

    capabilities: frozenset[Capability] = DEVICE_CAPABILITIES
    """Set per instance from what the module has (graphs, ranges) on top of :data:`DEVICE_CAPABILITIES`."""

    current_device = _module_function("current_device")
    device_count = _module_function("device_count")
    empty_cache = _module_function("empty_cache")
    stream = _module_function("stream")
    manual_seed = _module_function("manual_seed", "_rng")
    manual_seed_all = _module_function("manual_seed_all", "_rng")
    initial_seed = _module_function("initial_seed", "_rng")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Read the device module's names from the subclass's spec, as the contract reads its identity."""
        super().__init_subclass__(**kwargs)
        spec = cls.__dict__.get("spec")
        if spec is not None and spec.module:
            cls._vendor_package, cls._module_name, cls._install_hint = spec.package or "torch", spec.module, spec.hint

    def __init__(self) -> None:
        """Resolve the device module and look at what it has; raise :class:`~accelhal.BackendUnavailableError`."""
        super().__init__()
        try:
            module = import_device_module(self._vendor_package, self._module_name)
        except Exception as exc:  # a vendor stack can fail to load in any way
            from accelhal.errors import BackendUnavailableError  # off the path of a construction that succeeds

            raise BackendUnavailableError(
                self._name,
                f"cannot import {self._module_name} (from {self._vendor_package}): {type(exc).__name__}: {exc}",
                hint=self._install_hint or None,
            ) from exc
        self._m: Any = module
        self._rng: Any = module if self._rng_namespace is None else getattr(module, self._rng_namespace)
        self._follow_device_type()
        self._found = {name: callable(getattr(module, name, None)) for name in LOOKED_FOR}
        graph_class = self._graph_class or f"{self.device_type.upper()}Graph"
        self._graph: Any = getattr(module, graph_class, None) if self._found["graph"] else None
        self._ranges: Any = next(
            (getattr(module, n) for n in RANGE_MODULES if hasattr(getattr(module, n, None), "range_push")), None
        )
        found = {Capability.GRAPHS} if self._graph is not None else set()
        found |= {Capability.RANGES} if self._ranges is not None else set()
        self.capabilities = type(self).capabilities | found
        for name, source in self.bound_members().items():
            setattr(self, name, getattr(getattr(self, source), name))

    @classmethod
    def bound_members(cls) -> dict[str, str]:
        """Return the members this class binds to torch functions: ``{name: "_m" or "_rng"}`` (not overridden)."""
        return {
            name: value._accelhal_module_function
            for name in dir(cls)
            if (value := getattr(cls, name, None)) is not None and hasattr(value, "_accelhal_module_function")
        }

    @property
    def module(self) -> ModuleType:
        """The device module this accelerator wraps (``torch.cuda``, ``torch.npu``, ...)."""
        module: ModuleType = self._m
        return module

    def vendor_versions(self) -> dict[str, str]:
        """Return the vendor package's version (``{"torch_npu": "2.6.0"}``); empty for torch's own modules."""
        if self._vendor_package == "torch":
            return {}
        package = sys.modules.get(self._vendor_package.partition(".")[0])
        return {self._vendor_package: str(getattr(package, "__version__", "unknown"))}

    # ------------------------------------------------------------------ devices
    def _follow_device_type(self) -> None:
        """Rebuild the per-index device names and ``torch.device`` objects for the current ``device_type``."""
        self._names: PerIndex[str] = PerIndex(f"{self.device_type}:{{}}".format)
        self._devices: PerIndex[torch.device] = PerIndex(functools.partial(torch.device, self.device_type))

    def _indexed_device_name(self, device_index: int) -> str:
        """Return ``"<type>:<index>"``, cached per index (``device_name(None)`` is baked per class)."""
        return self._names[device_index]

    def device(self, device_index: int | None = None) -> torch.device:
        """Return the ``torch.device`` of ``device_index`` (the current device when ``None``), cached per index."""
        return self._devices[self.current_device() if device_index is None else device_index]

    def set_device(self, device_index: int) -> None:
        """Make ``device_index`` current (the module's ``set_device``)."""
        self._m.set_device(device_index)

    def current_device_name(self) -> str:
        """Return ``"<type>:<current index>"``."""
        return self._names[self.current_device()]

    def synchronize(self, device_index: int | None = None) -> None:
        """Wait for all work on ``device_index`` (the current device when ``None``)."""
        if device_index is None:
            self._m.synchronize()
        else:
            self._m.synchronize(device_index)

    def is_available(self) -> bool:
        """Return True when at least one device is visible; counts without initialising the runtime."""
        count: int = self._m.device_count()
        return count > 0

    # ------------------------------------------------------------------ RNG
    def set_rng_state(self, new_state: torch.Tensor, device_index: int | None = None) -> None:
        """Restore the generator state of ``device_index`` (current device when ``None``)."""
        if device_index is None:
            self._rng.set_rng_state(new_state)
        else:
            self._rng.set_rng_state(new_state, device_index)

    def get_rng_state(self, device_index: int | None = None) -> torch.Tensor:
        """Return the generator state of ``device_index`` (current device when ``None``)."""
        if device_index is None:
            state: torch.Tensor = self._rng.get_rng_state()
        else:
            state = self._rng.get_rng_state(device_index)
        return state

    def default_generator(self, device_index: int) -> torch.Generator:
        """Return the default generator of ``device_index`` (initialises the runtime, which creates them)."""
        generators = self._rng.default_generators
        if not generators:
            self._m.current_device()  # the runtime's lazy initialisation fills default_generators
            generators = self._rng.default_generators
        generator: torch.Generator = generators[check_device_index(device_index)]
        return generator

    # ------------------------------------------------------------------ streams and events
    @property
    def Stream(self) -> type[Any] | None:  # noqa: N802 - DeepSpeed's name
        """The module's stream class."""
        stream_class: type[Any] = self._m.Stream
        return stream_class

    def current_stream(self, device_index: int | None = None) -> Any:
        """Return the current stream of ``device_index``."""
        return self._m.current_stream() if device_index is None else self._m.current_stream(device_index)

    def default_stream(self, device_index: int | None = None) -> Any:
        """Return the default stream of ``device_index``."""
        return self._m.default_stream() if device_index is None else self._m.default_stream(device_index)

    @property
    def Event(self) -> type[Any] | None:  # noqa: N802 - DeepSpeed's name
        """The module's event class (``Event(enable_timing=True)`` measures device time)."""
        event_class: type[Any] = self._m.Event
        return event_class

    # ------------------------------------------------------------------ memory
    def memory_allocated(self, device_index: int | None = None) -> int:
        """Return the bytes held by tensors on ``device_index``."""
        value: int = self._m.memory_allocated() if device_index is None else self._m.memory_allocated(device_index)
        return value

    def max_memory_allocated(self, device_index: int | None = None) -> int:
        """Return the peak of :meth:`memory_allocated` since the last reset."""
        m = self._m
        value: int = m.max_memory_allocated() if device_index is None else m.max_memory_allocated(device_index)
        return value

    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """Return the allocator's statistics (``"allocated_bytes.all.current"``, ...)."""
        return dict(self._m.memory_stats() if device_index is None else self._m.memory_stats(device_index))

    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """Reset every peak figure of ``device_index``."""
        if device_index is None:
            self._m.reset_peak_memory_stats()
        else:
            self._m.reset_peak_memory_stats(device_index)

    def memory_reserved(self, device_index: int | None = None) -> int:
        """Return the bytes reserved by the caching allocator."""
        value: int = self._m.memory_reserved() if device_index is None else self._m.memory_reserved(device_index)
        return value

    def max_memory_reserved(self, device_index: int | None = None) -> int:
        """Return the peak of :meth:`memory_reserved` since the last reset."""
        m = self._m
        value: int = m.max_memory_reserved() if device_index is None else m.max_memory_reserved(device_index)
        return value

    def _index(self, device_index: int | None) -> int:
        return self.current_device() if device_index is None else check_device_index(device_index)

    def total_memory(self, device_index: int | None = None) -> int:
        """Return the device's capacity in bytes, from its properties."""
        return int(self._m.get_device_properties(self._index(device_index)).total_memory)

    def available_memory(self, device_index: int | None = None) -> int:
        """Return the free bytes as the driver reports them (``mem_get_info``), else total minus allocated."""
        index = self._index(device_index)
        if self._found["mem_get_info"]:
            free, _total = self._m.mem_get_info(index)
            return int(free)
        return self.total_memory(index) - self.memory_allocated(index)

    # ------------------------------------------------------------------ dtypes
    def is_bf16_supported(self) -> bool:
        """Return the runtime's answer for the current device (emulation does not count); False without a device."""
        if not self.is_available():
            return False
        if self._bf16_excludes_emulation:
            return bool(self._m.is_bf16_supported(including_emulation=False))
        return bool(self._m.is_bf16_supported())

    def is_fp16_supported(self) -> bool:
        """Return True when a device is visible (every runtime of this shape computes in float16)."""
        return self.is_available()

    # ------------------------------------------------------------------ misc
    def range_push(self, msg: str, domain: str | None = None, category: str | None = None) -> None:
        """Open a profiler range with the runtime's range module (no-op without one)."""
        if self._ranges is not None:
            self._ranges.range_push(msg)

    def range_pop(self, domain: str | None = None) -> None:
        """Close the innermost profiler range."""
        if self._ranges is not None:
            self._ranges.range_pop()

    def lazy_call(self, callback: Callable[[], _T]) -> _T | None:
        """Queue ``callback`` until the runtime initialises (the module's ``_lazy_call``); else run it now."""
        if not self._found["_lazy_call"]:
            return super().lazy_call(callback)
        self._m._lazy_call(callback)
        return None

    def device_description(self, device_index: int) -> str:
        """Return the runtime's name for the device (``"NVIDIA H100 80GB HBM3"``), else the device name."""
        if not self._found["get_device_name"]:
            return super().device_description(device_index)
        return str(self._m.get_device_name(device_index))

    def device_capability(self, device_index: int) -> str | None:
        """Return ``"major.minor"`` from the runtime's ``get_device_capability``; ``None`` without one."""
        if not self._found["get_device_capability"]:
            return None
        major, minor = self._m.get_device_capability(device_index)
        return f"{major}.{minor}"

    # ------------------------------------------------------------------ graphs

    def is_current_stream_capturing(self) -> bool:
        """Return True while a graph capture is in progress on the current stream (False without the query)."""
        if not self._found["is_current_stream_capturing"]:
            return False
        return bool(self._m.is_current_stream_capturing())

    def create_graph(self) -> Any:
        """Return a new, empty graph of the runtime's graph class; ``None`` without graphs (DeepSpeed's convention)."""
        return None if self._graph is None else self._graph()

    def capture_to_graph(
        self, graph: Any, pool: Any = None, stream: Any = None
    ) -> contextlib.AbstractContextManager[Any]:
        """Return the runtime's ``graph(g, pool, stream)`` capture context; a no-op context without graphs."""
        if self._graph is None:
            return super().capture_to_graph(graph, pool, stream)
        context: contextlib.AbstractContextManager[Any] = self._m.graph(graph, pool=pool, stream=stream)
        return context

    def replay_graph(self, graph: Any) -> None:
        """Replay a captured graph."""
        if self._graph is None:
            super().replay_graph(graph)
        else:
            graph.replay()


GraphDeviceModuleAccelerator = DeviceModuleAccelerator
"""The same class: graphs are found by looking (plugins written against accelhal 0.1 name it)."""
