"""``DeviceModuleAccelerator``: the whole contract, implemented once over a torch.cuda-shaped module.

``torch.cuda``, ``torch.xpu``, ``torch.npu`` (torch_npu), ``torch.mlu`` (torch_mlu),
``torch.sdaa`` (torch_sdaa) and Gaudi's ``habana_frameworks.torch.hpu`` share one shape:
``device_count()``, ``current_device()``, ``Stream``/``Event``, ``memory_allocated(device)``
and so on. A backend is a subclass that declares its names and overrides only what truly
differs::

    class NpuAccelerator(GraphDeviceModuleAccelerator):
        _name = device_type = "npu"
        _vendor_package = "torch_npu"          # imported first; it registers torch.npu
        _module_name = "torch.npu"
        _graph_class = "NPUGraph"
        _communication_backend_name = "hccl"
        _visible_devices_envs = ("ASCEND_RT_VISIBLE_DEVICES",)
        capabilities = DEVICE_CAPABILITIES | {Capability.GRAPHS}

The module is resolved when the accelerator is constructed; a missing or broken vendor
package raises :class:`~accelhal.BackendUnavailableError` naming the package. Construction
never initialises the device runtime.

Speed: the members whose torch function has the same arguments (``current_device``,
``device_count``, ``manual_seed``, ``manual_seed_all``, ``initial_seed``, ``empty_cache``,
``stream``) are the torch function itself, bound on the instance in ``__init__`` (unless a
subclass overrides them); the others are one direct call. Nothing is validated on those
paths beyond what torch validates. A ``device_index`` of ``None`` is not passed on: the
module's function is called without it (runtimes such as Gaudi's take no index there).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar, TypeVar

import torch

from accelhal.contract import Accelerator, _check_index
from accelhal.errors import BackendUnavailableError
from accelhal.probing import import_device_module
from accelhal.spec import Capability

_T = TypeVar("_T")
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


class _PerIndex(dict[Any, _V]):
    """``index -> make(index)``, built (and validated) on first use: later lookups are one dict read."""

    def __init__(self, make: Callable[[int], _V]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, index: Any) -> _V:
        value = self.make(_check_index(index))
        if type(index) is int:
            self[index] = value
        return value


def default_streams(current_stream: Callable[[int], Any]) -> _PerIndex[Any]:
    """``index -> default stream``, for runtimes without ``default_stream`` (``torch.xpu``, ``torch.accelerator``).

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

    return _PerIndex(read)


class DeviceModuleAccelerator(Accelerator):
    """The contract over a torch.cuda-shaped device module (see the module docstring)."""

    _vendor_package: ClassVar[str] = "torch"
    """The package imported first (it registers the device module): ``"torch_npu"``, ``"torch"``."""
    _module_name: ClassVar[str] = ""
    """The dotted device module: ``"torch.cuda"``, ``"torch.npu"``, ``"habana_frameworks.torch.hpu"``."""
    _install_hint: ClassVar[str] = ""
    """What to do when the vendor package is missing or broken (shown in the error)."""
    _rng_namespace: ClassVar[str | None] = None
    """Attribute of the module holding the RNG functions (``"random"`` on Gaudi); ``None``: the module."""
    _ranges_module: ClassVar[str | None] = None
    """The module's profiler-range submodule with ``range_push``/``range_pop`` (``"cnpx"`` on mlu)."""
    _bf16_excludes_emulation: ClassVar[bool] = False
    """Whether ``is_bf16_supported`` takes ``including_emulation`` (passed False: emulation does not count)."""

    capabilities: ClassVar[frozenset[Capability]] = DEVICE_CAPABILITIES

    _DIRECT: ClassVar[tuple[str, ...]] = (
        "current_device",
        "device_count",
        "empty_cache",
        "stream",
    )
    """Members that are the module's function itself (same arguments, same result)."""
    _DIRECT_RNG: ClassVar[tuple[str, ...]] = ("manual_seed", "manual_seed_all", "initial_seed")
    """Members that are the RNG namespace's function itself."""

    def __init__(self) -> None:
        """Resolve the device module; raise :class:`~accelhal.BackendUnavailableError` when it is missing."""
        super().__init__()
        try:
            module = import_device_module(self._vendor_package, self._module_name)
        except Exception as exc:  # a vendor stack can fail to load in any way
            raise BackendUnavailableError(
                self._name,
                f"cannot import {self._module_name} (from {self._vendor_package}): {type(exc).__name__}: {exc}",
                hint=self._install_hint or None,
            ) from exc
        self._m: Any = module
        self._rng: Any = module if self._rng_namespace is None else getattr(module, self._rng_namespace)
        self._names: _PerIndex[str] = _PerIndex(f"{self.device_type}:{{}}".format)
        self._devices: _PerIndex[torch.device] = _PerIndex(functools.partial(torch.device, self.device_type))
        for name, source in self.bound_members().items():
            setattr(self, name, getattr(module if source == "module" else self._rng, name))

    @classmethod
    def bound_members(cls) -> dict[str, str]:
        """The members this class binds to torch functions: ``{name: "module" or "rng"}``."""
        bound = {name: "module" for name in cls._DIRECT}
        bound.update({name: "rng" for name in cls._DIRECT_RNG})
        own = vars(DeviceModuleAccelerator)
        return {name: where for name, where in bound.items() if getattr(cls, name) is own[name]}

    @property
    def module(self) -> ModuleType:
        """The device module this accelerator wraps (``torch.cuda``, ``torch.npu``, ...)."""
        module: ModuleType = self._m
        return module

    def vendor_versions(self) -> dict[str, str]:
        """The vendor package's version (``{"torch_npu": "2.6.0"}``); empty for torch's own modules."""
        if self._vendor_package == "torch":
            return {}
        package = sys.modules.get(self._vendor_package.partition(".")[0])
        return {self._vendor_package: str(getattr(package, "__version__", "unknown"))}

    def device_description(self, device_index: int) -> str:
        """The runtime's name for the device (``"NVIDIA H100 80GB HBM3"``)."""
        return str(self._m.get_device_name(device_index))

    def device_capability(self, device_index: int) -> str | None:
        """``"major.minor"`` from the runtime's ``get_device_capability``."""
        major, minor = self._m.get_device_capability(device_index)
        return f"{major}.{minor}"

    # ------------------------------------------------------------------ devices
    def _indexed_device_name(self, device_index: int) -> str:
        """``"<type>:<index>"``, cached per index (``device_name(None)`` is baked per class)."""
        return self._names[device_index]

    def device(self, device_index: int | None = None) -> torch.device:
        """The ``torch.device`` of ``device_index`` (the current device when ``None``), cached per index."""
        return self._devices[self.current_device() if device_index is None else device_index]

    def set_device(self, device_index: int) -> None:
        """Make ``device_index`` current (the module's ``set_device``)."""
        self._m.set_device(device_index)

    def current_device(self) -> int:
        """The current device index (the module's ``current_device``)."""
        index: int = self._m.current_device()
        return index

    def current_device_name(self) -> str:
        """``"<type>:<current index>"``."""
        return self._names[self.current_device()]

    def device_count(self) -> int:
        """Devices visible to this process (the module's ``device_count``)."""
        count: int = self._m.device_count()
        return count

    def synchronize(self, device_index: int | None = None) -> None:
        """Wait for all work on ``device_index`` (the current device when ``None``)."""
        if device_index is None:
            self._m.synchronize()
        else:
            self._m.synchronize(device_index)

    def is_available(self) -> bool:
        """True when at least one device is visible; counts without initialising the runtime."""
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
        """The generator state of ``device_index`` (current device when ``None``)."""
        if device_index is None:
            state: torch.Tensor = self._rng.get_rng_state()
        else:
            state = self._rng.get_rng_state(device_index)
        return state

    def manual_seed(self, seed: int) -> None:
        """Seed the current device's generator."""
        self._rng.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        """Seed every device's generator."""
        self._rng.manual_seed_all(seed)

    def initial_seed(self) -> int:
        """The initial seed of the current device's generator."""
        seed: int = self._rng.initial_seed()
        return seed

    def default_generator(self, device_index: int) -> torch.Generator:
        """The default generator of ``device_index`` (initialises the runtime, which creates them)."""
        generators = self._rng.default_generators
        if not generators:
            self._m.current_device()  # the runtime's lazy initialisation fills default_generators
            generators = self._rng.default_generators
        generator: torch.Generator = generators[_check_index(device_index)]
        return generator

    # ------------------------------------------------------------------ streams and events
    @property
    def Stream(self) -> type[Any] | None:  # noqa: N802 - DeepSpeed's name
        """The module's stream class."""
        stream_class: type[Any] = self._m.Stream
        return stream_class

    def stream(self, stream: Any) -> contextlib.AbstractContextManager[Any]:
        """The module's ``stream(s)`` context (a no-op for ``None``)."""
        context: contextlib.AbstractContextManager[Any] = self._m.stream(stream)
        return context

    def current_stream(self, device_index: int | None = None) -> Any:
        """The current stream of ``device_index``."""
        return self._m.current_stream() if device_index is None else self._m.current_stream(device_index)

    def default_stream(self, device_index: int | None = None) -> Any:
        """The default stream of ``device_index``."""
        return self._m.default_stream() if device_index is None else self._m.default_stream(device_index)

    @property
    def Event(self) -> type[Any] | None:  # noqa: N802 - DeepSpeed's name
        """The module's event class (``Event(enable_timing=True)`` measures device time)."""
        event_class: type[Any] = self._m.Event
        return event_class

    # ------------------------------------------------------------------ memory
    def empty_cache(self) -> None:
        """Release cached allocator blocks."""
        self._m.empty_cache()

    def memory_allocated(self, device_index: int | None = None) -> int:
        """Bytes held by tensors on ``device_index``."""
        value: int = self._m.memory_allocated() if device_index is None else self._m.memory_allocated(device_index)
        return value

    def max_memory_allocated(self, device_index: int | None = None) -> int:
        """Peak of :meth:`memory_allocated` since the last reset."""
        m = self._m
        value: int = m.max_memory_allocated() if device_index is None else m.max_memory_allocated(device_index)
        return value

    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """The allocator's statistics (``"allocated_bytes.all.current"``, ...)."""
        return dict(self._m.memory_stats() if device_index is None else self._m.memory_stats(device_index))

    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """Reset every peak figure of ``device_index``."""
        if device_index is None:
            self._m.reset_peak_memory_stats()
        else:
            self._m.reset_peak_memory_stats(device_index)

    def memory_reserved(self, device_index: int | None = None) -> int:
        """Bytes reserved by the caching allocator."""
        value: int = self._m.memory_reserved() if device_index is None else self._m.memory_reserved(device_index)
        return value

    def max_memory_reserved(self, device_index: int | None = None) -> int:
        """Peak of :meth:`memory_reserved` since the last reset."""
        m = self._m
        value: int = m.max_memory_reserved() if device_index is None else m.max_memory_reserved(device_index)
        return value

    def _index(self, device_index: int | None) -> int:
        return self.current_device() if device_index is None else _check_index(device_index)

    def total_memory(self, device_index: int | None = None) -> int:
        """The device's capacity in bytes, from its properties."""
        return int(self._m.get_device_properties(self._index(device_index)).total_memory)

    def available_memory(self, device_index: int | None = None) -> int:
        """Free bytes on the device as the driver reports them (``mem_get_info``)."""
        free, _total = self._m.mem_get_info(self._index(device_index))
        return int(free)

    def available_memory_from_allocator(self, device_index: int | None = None) -> int:
        """Total minus allocated bytes: ``available_memory`` of runtimes without ``mem_get_info``.

        A backend selects it with ``available_memory = DeviceModuleAccelerator.available_memory_from_allocator``.
        """
        index = self._index(device_index)
        return self.total_memory(index) - self.memory_allocated(index)

    # ------------------------------------------------------------------ dtypes
    def is_bf16_supported(self) -> bool:
        """The runtime's answer for the current device (emulation does not count); False without a device."""
        if not self.is_available():
            return False
        if self._bf16_excludes_emulation:
            return bool(self._m.is_bf16_supported(including_emulation=False))
        return bool(self._m.is_bf16_supported())

    def is_fp16_supported(self) -> bool:
        """True when a device is visible (every runtime of this shape computes in float16)."""
        return self.is_available()

    # ------------------------------------------------------------------ misc
    def range_push(self, msg: str, domain: str | None = None, category: str | None = None) -> None:
        """Open a profiler range with the runtime's range module (no-op without one)."""
        if self._ranges_module is not None:
            getattr(self._m, self._ranges_module).range_push(msg)

    def range_pop(self, domain: str | None = None) -> None:
        """Close the innermost profiler range."""
        if self._ranges_module is not None:
            getattr(self._m, self._ranges_module).range_pop()

    def lazy_call(self, callback: Callable[[], _T]) -> _T | None:
        """Queue ``callback`` until the runtime initialises (run now if it already has); returns ``None``."""
        self._m._lazy_call(callback)
        return None


class GraphDeviceModuleAccelerator(DeviceModuleAccelerator):
    """A :class:`DeviceModuleAccelerator` whose runtime captures and replays graphs.

    The backend names the module's graph class; capture uses the module's
    ``graph(g, pool=..., stream=...)`` context and ``is_current_stream_capturing()``.
    """

    _graph_class: ClassVar[str] = ""
    """The module's graph class (``"CUDAGraph"``, ``"NPUGraph"``)."""

    def is_current_stream_capturing(self) -> bool:
        """True while a graph capture is in progress on the current stream."""
        return bool(self._m.is_current_stream_capturing())

    def create_graph(self) -> Any:
        """A new, empty graph of the runtime's graph class."""
        return getattr(self._m, self._graph_class)()

    def capture_to_graph(
        self, graph: Any, pool: Any = None, stream: Any = None
    ) -> contextlib.AbstractContextManager[Any]:
        """The runtime's ``graph(g, pool, stream)`` capture context."""
        context: contextlib.AbstractContextManager[Any] = self._m.graph(graph, pool=pool, stream=stream)
        return context

    def replay_graph(self, graph: Any) -> None:
        """Replay a captured graph."""
        graph.replay()
