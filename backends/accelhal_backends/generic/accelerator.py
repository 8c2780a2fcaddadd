"""The generic accelerator: the contract over ``torch.accelerator`` and the device's own module.

Public here: :class:`GenericAccelerator`, and ``classes.<device type>``, its class for one device type, built on
first use (the spec names it lazily as ``"accelhal_backends.generic.accelerator:classes.<type>"``). Event
timing, pinning, device memory figures and graphs are tried once, on the first read of ``capabilities`` (which
therefore uses the current device). Importing this module imports torch. What each member calls, and what a
device must provide: ``docs/backends.md``, "The generic backend".
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_index
from accelhal.contract.device_module import PerIndex, default_streams
from accelhal.contract.spec import Capability
from accelhal.errors import UnsupportedFeatureError
from accelhal_backends.generic import DEVICE_MODULE_OPTIONAL, DEVICE_MODULE_RNG, spec_for

_T = TypeVar("_T")

TORCH_CAPABILITIES = frozenset({Capability.STREAMS, Capability.EVENTS})
"""What torch's accelerator concept gives every accelerator: ``torch.Stream`` and ``torch.Event``."""


def device_module(device_type: str) -> ModuleType | None:
    """``torch.get_device_module(device_type)``, or ``None`` when the device registers none."""
    try:
        module: ModuleType = torch.get_device_module(device_type)
    except (RuntimeError, AttributeError):
        return None
    return module


_current_index = torch.accelerator.current_device_index
_current_stream = torch.accelerator.current_stream
_get_memory_info = torch.accelerator.get_memory_info
_set_index: Callable[[int], None] = getattr(torch._C, "_accelerator_setDeviceIndex", torch.accelerator.set_device_index)
"""What ``torch.accelerator.set_device_index`` calls once it has an index: ``set_device`` has already
checked it (the public function's argument parsing cost 15% of the member; ``benchmarks/generic.py``)."""
_synchronize = torch.accelerator.synchronize


def _memory_figure(name: str, doc: str) -> Callable[..., int]:
    """A member returning ``torch.accelerator.<name>(device_index)`` (an int)."""
    figure = getattr(torch.accelerator, name)

    def member(self: GenericAccelerator, device_index: int | None = None) -> int:
        if device_index.__class__ is not int and device_index is not None:
            device_index = check_device_index(device_index)
        value: int = figure(device_index)
        return value

    member.__name__ = member.__qualname__ = name
    member.__doc__ = doc
    return member


class _Discovered:
    """The ``capabilities`` of a generic accelerator: tried once per instance on first read.

    The answer is stored in the instance (``capabilities``, and ``_pins`` for the pinning
    path), so later reads are plain attribute reads.
    """

    def __get__(self, instance: GenericAccelerator | None, owner: type) -> frozenset[Capability]:
        if instance is None:
            return TORCH_CAPABILITIES
        found = instance._try_capabilities()
        instance.__dict__.update(capabilities=found, _pins=Capability.PINNING in found)
        return found


class _Pins:
    """``_pins``: whether the device pins host memory (reads ``capabilities`` first, which stores it)."""

    def __get__(self, instance: GenericAccelerator | None, owner: type) -> bool:
        return instance is not None and Capability.PINNING in instance.capabilities


class GenericAccelerator(Accelerator):
    """Torch's accelerator of one device type, through ``torch.accelerator`` (see the module docstring)."""

    capabilities = _Discovered()
    _pins = _Pins()

    def __init__(self) -> None:
        """Find the device module; binds the members that are ``torch.accelerator`` functions. No device is used."""
        super().__init__()
        self._m: Any = device_module(self.device_type)
        self._default_streams = default_streams(_current_stream)
        self._names: PerIndex[str] = PerIndex(f"{self.device_type}:{{}}".format)
        self.__dict__.update(Stream=torch.Stream, Event=torch.Event)  # an instance read is the cheapest read
        accelerator = torch.accelerator
        for member, function in (
            ("current_device", accelerator.current_device_index),
            ("device_count", accelerator.device_count),
            ("empty_cache", accelerator.empty_cache),
        ):
            setattr(self, member, function)

    @property
    def module(self) -> ModuleType | None:
        """The device module (``torch.get_device_module(<type>)``), or ``None`` without one."""
        module: ModuleType | None = self._m
        return module

    def device_module_gaps(self) -> list[str]:
        """What of the device-module checklist (``docs/backends.md``) the device module lacks, in the checklist's order.

        :data:`~accelhal_backends.generic.DEVICE_MODULE_RNG` first (each missing one makes its member
        raise), then :data:`~accelhal_backends.generic.DEVICE_MODULE_OPTIONAL` (each missing one has an
        answer of its own). Everything, without a device module.
        """
        return [name for name in (*DEVICE_MODULE_RNG, *DEVICE_MODULE_OPTIONAL) if not hasattr(self._m, name)]

    def vendor_versions(self) -> dict[str, str]:
        """The version of the package that provides the device module (``{"torch_gcu": "2.5.0"}``)."""
        package = getattr(self._m, "__name__", "torch").partition(".")[0]
        if package == "torch":
            return {}
        return {package: str(getattr(sys.modules.get(package), "__version__", "unknown"))}

    def device_description(self, device_index: int) -> str:
        """The device module's ``get_device_name(i)``, else the device string."""
        get_name = getattr(self._m, "get_device_name", None)
        return self.device_name(device_index) if get_name is None else str(get_name(device_index))

    def _missing(self, member: str) -> UnsupportedFeatureError:
        module = getattr(self._m, "__name__", None)
        where = f"the device module {module}" if module else f"torch (no device module for {self.device_type!r})"
        return UnsupportedFeatureError(self._name, member, f"{where} has no {member} and torch.accelerator has none")

    def _from_module(self, member: str) -> Any:
        value = getattr(self._m, member, None)
        if value is None:
            raise self._missing(member)
        return value

    # ------------------------------------------------------------------ devices
    def set_device(self, device_index: int) -> None:
        """``torch.accelerator.set_device_index``."""
        if device_index.__class__ is not int or device_index < 0:
            device_index = check_device_index(device_index)  # a decimal string or a torch.device; raises for the rest
        _set_index(device_index)

    def current_device(self) -> int:
        """``torch.accelerator.current_device_index()``."""
        return torch.accelerator.current_device_index()

    def device_count(self) -> int:
        """``torch.accelerator.device_count()``; creates no device context."""
        return torch.accelerator.device_count()

    def _indexed_device_name(self, device_index: int) -> str:
        """``"<type>:<index>"``, cached per index."""
        return self._names[device_index]

    def current_device_name(self) -> str:
        """``"<type>:<current index>"``."""
        return self._names[_current_index()]

    def synchronize(self, device_index: int | None = None) -> None:
        """``torch.accelerator.synchronize``."""
        if device_index.__class__ is not int and device_index is not None:
            device_index = check_device_index(device_index)
        _synchronize(device_index)

    def is_available(self) -> bool:
        """True when torch counts at least one device; creates no device context."""
        return torch.accelerator.device_count() > 0

    def _index(self, device_index: int | None) -> int:
        return _current_index() if device_index is None else check_device_index(device_index)

    # ------------------------------------------------------------------ RNG (the device module)
    def set_rng_state(self, new_state: torch.Tensor, device_index: int | None = None) -> None:
        """The device module's ``set_rng_state``."""
        set_state = self._from_module("set_rng_state")
        set_state(new_state) if device_index is None else set_state(new_state, check_device_index(device_index))

    def get_rng_state(self, device_index: int | None = None) -> torch.Tensor:
        """The device module's ``get_rng_state``."""
        get_state = self._from_module("get_rng_state")
        state: torch.Tensor = get_state() if device_index is None else get_state(check_device_index(device_index))
        return state

    def manual_seed(self, seed: int) -> None:
        """The device module's ``manual_seed``."""
        self._from_module("manual_seed")(seed)

    def manual_seed_all(self, seed: int) -> None:
        """The device module's ``manual_seed_all``."""
        self._from_module("manual_seed_all")(seed)

    def initial_seed(self) -> int:
        """The device module's ``initial_seed``."""
        return int(self._from_module("initial_seed")())

    def default_generator(self, device_index: int) -> torch.Generator:
        """The device module's ``default_generators[i]`` (its lazy initialisation fills them if needed)."""
        index = check_device_index(device_index)
        generators = self._from_module("default_generators")
        if not generators and callable(getattr(self._m, "_lazy_init", None)):
            self._m._lazy_init()
            generators = self._m.default_generators
        if index >= len(generators):
            raise ValueError(f"device_index {index} is out of range: {self._name} has {len(generators)} generator(s)")
        generator: torch.Generator = generators[index]
        return generator

    # ------------------------------------------------------------------ streams and events (torch's generic ones)
    Stream = torch.Stream  # plain class attributes: as cheap to read as torch.Stream itself
    Event = torch.Event

    def stream(self, stream: Any) -> contextlib.AbstractContextManager[Any]:
        """``stream`` itself (a ``torch.Stream`` is a context manager); a no-op context for ``None``."""
        if stream is None:
            return contextlib.nullcontext()
        context: contextlib.AbstractContextManager[Any] = stream
        return context

    def current_stream(self, device_index: int | None = None) -> Any:
        """``torch.accelerator.current_stream``."""
        if device_index.__class__ is not int and device_index is not None:
            device_index = check_device_index(device_index)
        return _current_stream(device_index)

    def default_stream(self, device_index: int | None = None) -> Any:
        """The stream a new thread starts with on the device (its default stream), read once per device."""
        return self._default_streams[self._index(device_index)]

    # ------------------------------------------------------------------ memory (torch.accelerator)
    memory_allocated = _memory_figure("memory_allocated", "Bytes held by tensors (``torch.accelerator``).")
    max_memory_allocated = _memory_figure("max_memory_allocated", "Peak of ``memory_allocated`` since the reset.")
    memory_reserved = _memory_figure("memory_reserved", "Bytes reserved by the device allocator.")
    max_memory_reserved = _memory_figure("max_memory_reserved", "Peak of ``memory_reserved`` since the reset.")

    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """``torch.accelerator.memory_stats`` (``"allocated_bytes.all.current"``, ...)."""
        return dict(torch.accelerator.memory_stats(device_index))

    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """``torch.accelerator.reset_peak_memory_stats``."""
        torch.accelerator.reset_peak_memory_stats(device_index)

    def total_memory(self, device_index: int | None = None) -> int:
        """The total of ``torch.accelerator.get_memory_info``."""
        index = _current_index() if device_index is None else check_device_index(device_index)
        total: int = self._memory_info(index)[1]
        return total

    def available_memory(self, device_index: int | None = None) -> int:
        """The free bytes of ``torch.accelerator.get_memory_info``."""
        index = _current_index() if device_index is None else check_device_index(device_index)
        free: int = self._memory_info(index)[0]
        return free

    def _memory_info(self, index: int) -> tuple[int, int]:
        """``get_memory_info(index)``; :class:`UnsupportedFeatureError` where the device's allocator keeps no figures.

        torch raises ``NotImplementedError`` where the allocator has no ``getMemoryInfo``, and asserts
        (``RuntimeError``) where it is not a ``c10::DeviceAllocator`` (a device registered from Python).
        """
        try:
            return _get_memory_info(index)
        except (NotImplementedError, RuntimeError) as exc:
            if isinstance(exc, RuntimeError) and "is not a DeviceAllocator" not in str(exc):
                raise
            raise UnsupportedFeatureError(self.name, "memory figures", str(exc).splitlines()[0]) from exc

    # ------------------------------------------------------------------ dtypes
    def _device_dtypes(self) -> set[torch.dtype] | None:
        """The current device's ``supported_dtypes``, or ``None`` when the device cannot say."""
        try:
            return set(torch.accelerator.get_device_capability(self._index(None))["supported_dtypes"])
        except (RuntimeError, KeyError, TypeError):
            return None

    def is_bf16_supported(self) -> bool:
        """The device module's ``is_bf16_supported()``, else whether the device lists bfloat16; False without one."""
        if not self.is_available():
            return False
        answer = getattr(self._m, "is_bf16_supported", None)
        if answer is not None:
            return bool(answer())
        dtypes = self._device_dtypes()
        return dtypes is not None and torch.bfloat16 in dtypes

    def is_fp16_supported(self) -> bool:
        """Whether the device lists float16 (True where it cannot say); False without a device."""
        if not self.is_available():
            return False
        dtypes = self._device_dtypes()
        return dtypes is None or torch.float16 in dtypes

    def is_fp64_supported(self) -> bool:
        """Whether the device lists float64 (True where it cannot say, the contract's default)."""
        dtypes = self._device_dtypes() if self.is_available() else None
        return dtypes is None or torch.float64 in dtypes

    # ------------------------------------------------------------------ capabilities, tried
    def _try_capabilities(self) -> frozenset[Capability]:
        """:data:`TORCH_CAPABILITIES` plus each optional feature whose trial on the current device succeeds."""
        found = set(TORCH_CAPABILITIES)
        if not self.is_available():
            return frozenset(found)
        trials = {
            Capability.EVENT_TIMING: self._times_events,
            Capability.PINNING: self._pins_host_memory,
            Capability.DEVICE_MEMORY_STATS: self._counts_memory,
            Capability.GRAPHS: self._makes_graphs,
        }
        for capability, trial in trials.items():
            try:
                if trial():
                    found.add(capability)
            except Exception:  # a device lacks a feature in any way: an error, a missing kernel, a refusal
                continue
        return frozenset(found)

    def _times_events(self) -> bool:
        start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
        start.record()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) >= 0.0

    def _pins_host_memory(self) -> bool:
        return bool(torch.empty(1).pin_memory().is_pinned())

    def _counts_memory(self) -> bool:
        before = self.memory_allocated()
        block = torch.empty(512, dtype=torch.uint8, device=self.device())
        grew = self.memory_allocated() > before
        del block
        return grew

    def _makes_graphs(self) -> bool:
        torch.accelerator.Graph()
        return True

    # ------------------------------------------------------------------ graphs (torch.accelerator.Graph, when tried)
    def create_graph(self) -> Any:
        """A ``torch.accelerator.Graph``, or ``None`` where the device has no graphs."""
        return torch.accelerator.Graph() if Capability.GRAPHS in self.capabilities else None

    def capture_to_graph(
        self, graph: Any, pool: Any = None, stream: Any = None
    ) -> contextlib.AbstractContextManager[Any]:
        """Capture into ``graph`` (on ``stream`` when given); a no-op context where the device has no graphs."""
        if Capability.GRAPHS not in self.capabilities or graph is None:
            return contextlib.nullcontext()
        context = contextlib.ExitStack()
        if stream is not None:
            context.enter_context(self.stream(stream))
        context.enter_context(graph)
        return context

    def replay_graph(self, graph: Any) -> None:
        """``graph.replay()``; nothing where the device has no graphs."""
        if graph is not None and Capability.GRAPHS in self.capabilities:
            graph.replay()

    # ------------------------------------------------------------------ pinning (when tried)
    def pin_memory(self, tensor: torch.Tensor, make_copy: bool = True, match_shape: bool = True) -> torch.Tensor:
        """A pinned copy of ``tensor`` (``tensor.pin_memory()``); the tensor itself where the device cannot pin.

        With ``make_copy=False``, a fresh buffer shaped like ``tensor`` (flat unless ``match_shape``).
        """
        if make_copy:
            return tensor.pin_memory() if self._pins else tensor
        return super().pin_memory(tensor, make_copy, match_shape)

    def _torch_pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor.pin_memory()``; the tensor itself where the device cannot pin."""
        return tensor.pin_memory() if Capability.PINNING in self.capabilities else tensor

    def _torch_empty_pinned(self, tensor: torch.Tensor, shape: Any) -> torch.Tensor:
        """A pinned buffer; an ordinary host buffer where the device cannot pin."""
        return tensor.new_empty(tuple(shape), pin_memory=Capability.PINNING in self.capabilities)

    # ------------------------------------------------------------------ misc
    def lazy_call(self, callback: Callable[[], _T]) -> _T | None:
        """The device module's ``_lazy_call`` (queued until it initialises); else ``callback()`` now."""
        queue = getattr(self._m, "_lazy_call", None)
        if queue is None:
            return callback()
        queue(callback)
        return None


def build_class(device_type: str) -> type[GenericAccelerator]:
    """The accelerator class of ``device_type``, whose identity is its registration's (:func:`spec_for`)."""
    namespace = {
        "__module__": __name__,
        "__qualname__": f"classes.{device_type}",
        "__doc__": f"Torch's accelerator {device_type!r} through torch.accelerator (the generic backend).",
        "spec": spec_for(device_type),
    }
    return type(device_type, (GenericAccelerator,), namespace)


class _Classes:
    """``classes.<device type>``: that device type's accelerator class, built once on first use."""

    def __init__(self) -> None:
        self._built: dict[str, type[GenericAccelerator]] = {}

    def __getattr__(self, device_type: str) -> type[GenericAccelerator]:
        if device_type.startswith("_"):
            raise AttributeError(device_type)
        built = self._built.get(device_type)
        if built is None:
            built = self._built[device_type] = build_class(device_type)
        return built


classes = _Classes()
"""The per-device-type classes: ``classes.gcu`` is the generic accelerator of ``gcu`` devices."""
