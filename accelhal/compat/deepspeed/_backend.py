"""DeepSpeed -> accelhal: a DeepSpeed accelerator class used as an accelhal backend.

:class:`DeepSpeedBackedAccelerator` forwards every contract member that DeepSpeed's
``DeepSpeedAccelerator`` also declares to an instance of the wrapped DeepSpeed class
(constructed when selection asks it for its identity facts, which it checks against the
spec; DeepSpeed's constructors initialise no device) and gives each
answer accelhal's one return type: ``current_device()`` an ``int``, ``device()`` a
``torch.device``, ``stream()``/``capture_to_graph()`` a context manager, memory figures
``int``, flags ``bool``, names ``str``, lists ``list``. Members accelhal has and
DeepSpeed does not (``info()``, ``device_description()``, ...) keep accelhal's defaults.
"""

from __future__ import annotations

import abc
import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from accelhal.compat.deepspeed._members import deepspeed_base, deepspeed_members
from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_index
from accelhal.contract.class_checks import contract_members
from accelhal.contract.compile_backend import CompileChoice
from accelhal.errors import ContractError, UnsupportedFeatureError

_RETURNS: dict[str, frozenset[str]] = {
    "int": frozenset(
        {
            "device_count",
            "initial_seed",
            "memory_allocated",
            "max_memory_allocated",
            "memory_cached",
            "max_memory_cached",
            "memory_reserved",
            "max_memory_reserved",
            "total_memory",
            "available_memory",
            "pin_memory_alignment",
        }
    ),
    "bool": frozenset(
        {
            "is_synchronized_device",
            "use_host_timers",
            "resolves_data_dependency",
            "handles_memory_backpressure",
            "is_bf16_supported",
            "is_fp16_supported",
            "is_fp64_supported",
            "is_available",
            "is_triton_supported",
            "prefer_triton_grouped_mm",
            "is_current_stream_capturing",
            "on_accelerator",
            "register_host_memory",
            "is_pinned",
            "_torch_is_pinned",
        }
    ),
    "str": frozenset(
        {"device_name", "current_device_name", "communication_backend_name", "op_builder_dir", "get_compile_backend"}
    ),
    "list": frozenset({"supported_dtypes", "export_envs", "visible_devices_envs"}),
    "context": frozenset({"stream", "capture_to_graph"}),
}
"""The return type accelhal promises for each forwarded member whose DeepSpeed answer varies by backend."""

_KIND_OF = {name: kind for kind, names in _RETURNS.items() for name in names}
_COPIED_ATTRIBUTES = ("supports_nvtx_domain", "_torch_pins_host_memory")


def _normalise(backend: str, name: str, value: Any) -> Any:
    kind = _KIND_OF.get(name)
    if kind is None:
        return value
    if kind == "bool":
        return bool(value)  # DeepSpeed's cpu answers None for "no fp16"
    if kind == "context":
        return value if hasattr(value, "__enter__") and hasattr(value, "__exit__") else contextlib.nullcontext()
    if value is None:
        raise UnsupportedFeatureError(backend, f"{name}()", "the wrapped DeepSpeed accelerator returned None")
    return {"int": int, "str": str, "list": list}[kind](value)


def _forward_method(name: str) -> Callable[..., Any]:
    def method(self: DeepSpeedBackedAccelerator, *args: Any, **kwargs: Any) -> Any:
        value = getattr(self.deepspeed_accelerator, name)(*args, **kwargs)
        return _normalise(self._name, name, value)

    method.__name__ = method.__qualname__ = name
    ours = getattr(Accelerator, name, None)
    if inspect.isfunction(ours):
        method.__signature__ = inspect.signature(ours)  # type: ignore[attr-defined]
        method.__doc__ = f"Forwarded to the DeepSpeed accelerator. {inspect.getdoc(ours) or ''}".strip()
    return method


def _forward_property(name: str) -> property:
    def getter(self: DeepSpeedBackedAccelerator) -> Any:
        return getattr(self.deepspeed_accelerator, name)

    return property(getter, doc=f"Forwarded to the DeepSpeed accelerator's {name}.")


class DeepSpeedBackedAccelerator(Accelerator):
    """An accelhal accelerator backed by a DeepSpeed accelerator class.

    Do not subclass it by hand: :func:`accelhal.compat.deepspeed.backend_from_deepspeed`
    makes one subclass per wrapped DeepSpeed class and registers it as a backend.

    >>> acc = accelhal.get_accelerator()          # ACCELHAL_ACCELERATOR=dscpu, see the docs
    >>> acc.deepspeed_accelerator                  # DeepSpeed's own CPU_Accelerator
    <deepspeed.accelerator.cpu_accelerator.CPU_Accelerator object at ...>
    >>> acc.current_device()                       # DeepSpeed answers the string '1' here
    1
    """

    deepspeed_class: ClassVar[type[Any] | None] = None
    """The wrapped DeepSpeed accelerator class."""

    # The wrapped instance answers these identity facts; selection checks its answers against the spec.
    _communication_backend_name = property(lambda self: str(self.deepspeed_accelerator.communication_backend_name()))
    _visible_devices_envs = property(lambda self: tuple(self.deepspeed_accelerator.visible_devices_envs()))
    _export_envs = property(lambda self: tuple(self.deepspeed_accelerator.export_envs()))

    def __init__(self) -> None:
        """Create the accelerator; the DeepSpeed accelerator is constructed on first use."""
        super().__init__()
        self._deepspeed: Any = None

    @property
    def deepspeed_accelerator(self) -> Any:
        """The DeepSpeed accelerator instance every member forwards to (constructed on first access)."""
        if self._deepspeed is None:
            if self.deepspeed_class is None:
                raise ContractError(f"{type(self).__qualname__} wraps no DeepSpeed accelerator class")
            self._deepspeed = self.deepspeed_class()
        return self._deepspeed

    def current_device(self) -> int:
        """DeepSpeed's ``current_device()`` as an int (its cpu answers ``LOCAL_RANK`` as a string, mps a device)."""
        value = self.deepspeed_accelerator.current_device()
        if isinstance(value, torch.device):
            return 0 if value.index is None else value.index
        if isinstance(value, str) and value.strip().isdecimal():  # as accelhal.contract.arguments reads indices
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ContractError(f"{self.deepspeed_class!r}.current_device() returned {value!r}, not a device index")

    def compile_backend_choice(self) -> CompileChoice:
        """The wrapped DeepSpeed accelerator's ``get_compile_backend()``, which accelhal does not second-guess."""
        reason = f"DeepSpeed's {type(self.deepspeed_accelerator).__qualname__}.get_compile_backend() answers it"
        return CompileChoice(self.get_compile_backend(), reason, "vendor")

    def device(self, device_index: int | None = None) -> torch.device:
        """DeepSpeed's ``device()`` when it is a ``torch.device``; otherwise the device its ``device_name`` names.

        (DeepSpeed's cpu answers ``None``, its mlu and sdaa a context-manager class.)
        """
        value = self.deepspeed_accelerator.device(device_index)
        if isinstance(value, torch.device):
            return value
        index = None if device_index is None else check_device_index(device_index)
        return torch.device(self.device_name(index))


def _forwarded_names() -> dict[str, str]:
    """DeepSpeed's members that accelhal's contract also declares, with their kinds."""
    ours = contract_members()
    # Members baked from class constants by Accelerator.__init_subclass__ are not explicit:
    # DeepSpeed's class answers them.
    explicit = {n for n, m in vars(DeepSpeedBackedAccelerator).items() if not getattr(m, "_accelhal_constant", False)}
    return {
        name: kind
        for name, kind in deepspeed_members().items()
        if kind in ("method", "property") and name in ours and name not in explicit
    }


def _install_forwarders() -> None:
    for name, kind in _forwarded_names().items():
        member = _forward_method(name) if kind == "method" else _forward_property(name)
        setattr(DeepSpeedBackedAccelerator, name, member)
    abc.update_abstractmethods(DeepSpeedBackedAccelerator)  # type: ignore[type-abstract]


_install_forwarders()


def _load(path: str) -> type[Any]:
    module_name, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ContractError(f"{path} is {obj!r}, not a class")
    return obj


_wrapped: dict[tuple[object, str, str], type[DeepSpeedBackedAccelerator]] = {}
_wrapped_lock = threading.Lock()


def wrap_deepspeed_class(
    deepspeed_class: type[Any] | str, name: str, device_type: str
) -> type[DeepSpeedBackedAccelerator]:
    """A :class:`DeepSpeedBackedAccelerator` subclass for ``deepspeed_class`` (a class or ``"module:Class"``).

    The same arguments give the same class. A DeepSpeed outside the supported releases raises
    :class:`~accelhal.UnsupportedReleaseError`.
    """
    key = (deepspeed_class, name, device_type)
    with _wrapped_lock:
        if key not in _wrapped:
            _wrapped[key] = _make_class(deepspeed_class, name, device_type)
        return _wrapped[key]


def _pin_through_deepspeed(self: DeepSpeedBackedAccelerator, tensor: torch.Tensor) -> torch.Tensor:
    """accelhal's device hook ``_torch_pin_memory``: DeepSpeed's ``pin_memory(tensor)`` (each of its forms)."""
    pinned: torch.Tensor = self.deepspeed_accelerator.pin_memory(tensor)
    return pinned


def _empty_pinned_through_deepspeed(
    self: DeepSpeedBackedAccelerator, tensor: torch.Tensor, shape: Sequence[int]
) -> torch.Tensor:
    """accelhal's device hook ``_torch_empty_pinned``: DeepSpeed's ``pin_memory`` of a fresh buffer."""
    return _pin_through_deepspeed(self, tensor.new_empty(tuple(shape)))


_ALIGNED_PINNING: dict[str, Any] = {
    "pin_memory": Accelerator.pin_memory,
    "_torch_pin_memory": _pin_through_deepspeed,
    "_torch_empty_pinned": _empty_pinned_through_deepspeed,
}
"""Where DeepSpeed's ``pin_memory`` is ``(tensor, align_bytes=1)``: accelhal's ``pin_memory(tensor, make_copy,
match_shape)`` stays accelhal's, and pins through DeepSpeed's ``pin_memory`` as its device hooks."""


def _make_class(deepspeed_class: type[Any] | str, name: str, device_type: str) -> type[DeepSpeedBackedAccelerator]:
    from accelhal.compat.deepspeed._releases import installed_shape

    shape = installed_shape()  # refuses a DeepSpeed outside SUPPORTED
    cls = _load(deepspeed_class) if isinstance(deepspeed_class, str) else deepspeed_class
    base = deepspeed_base()
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ContractError(f"{cls!r} is not a subclass of DeepSpeed's DeepSpeedAccelerator")
    abstract = sorted(getattr(cls, "__abstractmethods__", ()))
    if abstract:
        raise ContractError(f"{cls.__qualname__} leaves abstract: {', '.join(abstract)}")
    namespace: dict[str, Any] = {
        "_name": name,
        "device_type": device_type,
        "deepspeed_class": cls,
        "__module__": __name__,
        "__doc__": f"accelhal backend {name!r}, backed by DeepSpeed's {cls.__module__}.{cls.__qualname__}.",
    }
    for attribute in _COPIED_ATTRIBUTES:
        namespace[attribute] = bool(getattr(cls, attribute, getattr(Accelerator, attribute)))
    if shape.pins_with_align_bytes:
        namespace.update(_ALIGNED_PINNING)
    elif not shape.allocates_pinned_buffers:  # 0.19.6: its _torch_empty_pinned is torch's, which cpu cannot give
        namespace["_torch_empty_pinned"] = _empty_pinned_through_deepspeed
    return type(f"DeepSpeed_{cls.__name__}", (DeepSpeedBackedAccelerator,), namespace)


class _Registered:
    """``WRAPPED.<backend name>``: the class of a backend registered with a ``"module:Class"`` path.

    Lets a :class:`~accelhal.BackendSpec` name the class lazily, so DeepSpeed is imported
    only when that backend is selected.
    """

    def __getattr__(self, backend_name: str) -> type[DeepSpeedBackedAccelerator]:
        from accelhal.compat.deepspeed._targets import registered_target

        target, device_type = registered_target(backend_name)
        return wrap_deepspeed_class(target, backend_name, device_type)


WRAPPED = _Registered()
