"""accelhal -> DeepSpeed: an accelhal accelerator dressed as a ``DeepSpeedAccelerator``.

The adapter class is generated once per process from DeepSpeed's own abstract class: every
member DeepSpeed declares forwards to the wrapped accelhal accelerator with DeepSpeed's
signature; only the members DeepSpeed needs and accelhal does not answer are written here
(:data:`WRITTEN`, by the release's shape). :func:`host_adapter_class` answers as DeepSpeed's
``CPU_Accelerator`` on the host. See ``docs/migrating-from-deepspeed.md``, sections 2 and 8.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from typing import Any

import torch

from accelhal.compat.deepspeed._members import deepspeed_base, deepspeed_members, deepspeed_signature
from accelhal.compat.deepspeed._ops import built_by_accelhal
from accelhal.compat.deepspeed._releases import installed_shape
from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_index
from accelhal.errors import ContractError, UnsupportedFeatureError
from accelhal.ops import NotImplementedBuilder

ADAPTER_CLASS_NAME = "AccelhalDeepSpeedAccelerator"


class UnavailableBuilder(NotImplementedBuilder):
    """What the adapter returns for an op that neither DeepSpeed nor accelhal builds for this device.

    It has the parts of DeepSpeed's ``OpBuilder`` that DeepSpeed reads from every builder
    (``name``, ``NAME``, ``absolute_name()``, ``is_compatible()`` -> False); ``load()``
    raises :class:`~accelhal.UnsupportedFeatureError` naming the op and the backend.
    """

    NAME = "deepspeed_not_implemented"

    def __init__(self, name: str | None = None) -> None:
        """Mirror DeepSpeed's ``OpBuilder(name)`` constructor."""
        self.name = self.NAME if name is None else name

    def absolute_name(self) -> str:
        """The dotted module name DeepSpeed would import the built op as."""
        return f"deepspeed.ops.{self.name}_op"


@functools.cache
def _disabled_builder(real: type[Any], backend: str, class_name: str) -> type[Any]:
    """``real`` (one of DeepSpeed's builders), except that it says it cannot be built here."""

    def is_compatible(self: Any, verbose: bool = False) -> bool:
        return False

    def load(self: Any, verbose: bool = True) -> Any:
        raise UnsupportedFeatureError(
            backend, f"op {class_name!r}", "it was disabled with as_deepspeed_accelerator(disable_ops=...)"
        )

    namespace = {"is_compatible": is_compatible, "load": load, "jit_load": load, "__module__": __name__}
    return type(class_name, (real,), namespace)


@functools.cache
def _unavailable_builder(backend: str, class_name: str) -> type[UnavailableBuilder]:
    return type(class_name, (UnavailableBuilder,), {"backend": backend, "op_name": class_name, "__module__": __name__})


EMPTY_OP_BUILDER_DIR = "accelhal.compat.deepspeed.op_builder"
"""The op-builder package DeepSpeed is given for a device it has no accelerator for: it lists no builders."""


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a missing parent package
        return False


@functools.cache
def deepspeed_twin(*names: str) -> Any | None:
    """A bare instance of DeepSpeed's own accelerator for the first of ``names`` DeepSpeed ships, else None.

    Its constructor is not run (as in DeepSpeed's own accelerator test), so nothing is
    initialised; it is used only for the answers that depend on DeepSpeed's own files:
    which op builders exist for the device and where (``op_builder_dir``,
    ``get_op_builder``), and the visible-devices variable DeepSpeed's launcher expects.
    """
    from accelhal.compat.deepspeed._own_import import deepspeed_own_import

    with deepspeed_own_import():
        from deepspeed.accelerator.real_accelerator import SUPPORTED_ACCELERATOR_LIST

    base = deepspeed_base()
    for name in names:
        if name not in SUPPORTED_ACCELERATOR_LIST:
            continue
        module_name = f"deepspeed.accelerator.{name}_accelerator"
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, base) and value.__module__ == module_name:
                twin: Any = object.__new__(value)
                if not hasattr(twin, "class_dict"):  # the builder cache some set in __init__, empty there too
                    twin.class_dict = None
                return twin
    return None


def _index_position(name: str) -> int | None:
    """Where ``device_index`` sits among the positional parameters of DeepSpeed's ``name``, if it has one."""
    params = [p for p in deepspeed_signature(name).parameters if p != "self"]
    return params.index("device_index") if "device_index" in params else None


def _delegate_method(name: str) -> Callable[..., Any]:
    position = _index_position(name)
    if position is None:

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._member(name)(*args, **kwargs)

    else:

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if len(args) > position and isinstance(args[position], torch.device):
                args = (*args[:position], self._device_index(name, args[position]), *args[position + 1 :])
            elif isinstance(kwargs.get("device_index"), torch.device):
                kwargs["device_index"] = self._device_index(name, kwargs["device_index"])
            return self._member(name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__signature__ = deepspeed_signature(name)  # type: ignore[attr-defined]
    method.__doc__ = _doc(name)
    return method


def _delegate_property(name: str) -> property:
    def getter(self: Any) -> Any:
        return self._member(name)

    return property(getter, doc=_doc(name))


def _doc(name: str) -> str:
    ours = inspect.getattr_static(Accelerator, name, None)
    text = inspect.getdoc(ours) if ours is not None and not isinstance(ours, (bool, str, int)) else None
    return f"Delegated to the accelhal accelerator. {text or ''}".strip()


class _AdapterMembers:
    """The hand-written part of the adapter (mixed into the generated class)."""

    accelhal_accelerator: Accelerator
    _disabled_ops: frozenset[str]

    def __init__(self, accelerator: Accelerator, disable_ops: Iterable[str] = ()) -> None:
        """Wrap ``accelerator``; DeepSpeed's own ``__init__`` (which sets three names to None) is not run."""
        self.accelhal_accelerator = accelerator
        self._disabled_ops = frozenset(disable_ops)

    def __repr__(self) -> str:
        return f"<{ADAPTER_CLASS_NAME} wrapping {self.accelhal_accelerator!r}>"

    def _member(self, name: str) -> Any:
        try:
            return getattr(self.accelhal_accelerator, name)
        except AttributeError:
            raise UnsupportedFeatureError(
                self.accelhal_accelerator.name,
                f"DeepSpeed's accelerator member {name!r}",
                f"{type(self.accelhal_accelerator).__qualname__} has no such member",
            ) from None

    def _device_index(self, member: str, device: torch.device) -> torch.device | int | None:
        """A ``torch.device`` passed as a device index, as DeepSpeed's own accelerators take it.

        DeepSpeed passes back the ``torch.device`` its ``device_name()`` named; on cpu that
        is ``torch.device("cpu")``, without an index (ZeRO-3's ``zero.Init`` calls
        ``set_device`` with it). One of the accelerator's type without an index means the
        current device; anything else goes to accelhal, which takes an indexed device and
        names what it refuses.
        """
        acc = self.accelhal_accelerator
        if device.index is not None or device.type != acc.device_type:
            return device
        return acc.current_device() if member == "set_device" else None

    def __getattr__(self, name: str) -> Any:
        """Members DeepSpeed reads outside its abstract class (``get_rss``, ...) come from accelhal."""
        if name.startswith("__") or name in ("accelhal_accelerator", "_disabled_ops"):
            raise AttributeError(name)
        return getattr(self.accelhal_accelerator, name)

    # ---------------------------------------------------------- read outside DeepSpeed's abstract class
    @property
    def _name(self) -> str:
        """The accelhal backend's name (DeepSpeed compares it with the name recorded at install time)."""
        return self.accelhal_accelerator.name

    @property
    def _communication_backend_name(self) -> str:
        """What DeepSpeed's own accelerators keep in this attribute."""
        return self.accelhal_accelerator.communication_backend_name()

    @property
    def _compile_backend(self) -> str:
        """What DeepSpeed's own accelerators keep in this attribute."""
        return self.accelhal_accelerator.get_compile_backend()

    def communication_backend_version(self) -> tuple[int, ...]:
        """The collective library's version, from the accelhal backend when it reports one, else ``(0, 0, 0)``.

        ``(0, 0, 0)`` (as DeepSpeed's supa backend answers) means "unknown": DeepSpeed then
        assumes an old library and keeps its conservative defaults.
        """
        version = getattr(self.accelhal_accelerator, "communication_backend_version", None)
        return tuple(version()) if callable(version) else (0, 0, 0)

    def _get_nvml_gpu_id(self, torch_gpu_id: int) -> int:
        """The driver's index of device ``torch_gpu_id``, through the visible-devices variable (DeepSpeed's helper).

        DeepSpeed's profilers ask NVML with it. Where the variable lists indices, position
        ``torch_gpu_id`` of the list; where it is unset or lists UUIDs, the index itself.
        """
        index = check_device_index(torch_gpu_id, "_get_nvml_gpu_id")
        for variable in self.accelhal_accelerator.visible_devices_envs():
            listed = [entry.strip() for entry in os.environ.get(variable, "").split(",") if entry.strip()]
            if listed and all(entry.isdecimal() for entry in listed):
                return int(listed[index])
            if listed:
                break
        return index

    # ---------------------------------------------------------- op builders
    def _twin(self) -> Any | None:
        acc = self.accelhal_accelerator
        return deepspeed_twin(acc.name, acc.device_type)

    def op_builder_dir(self) -> str:
        """DeepSpeed's op-builder package for this device (``deepspeed.ops.op_builder.cpu`` on cpu).

        For a device DeepSpeed has no accelerator for, the backend's ``op_builder_dir()``
        where that package exists, else :data:`EMPTY_OP_BUILDER_DIR` (DeepSpeed imports it).
        """
        twin = self._twin()
        if twin is not None:
            return str(twin.op_builder_dir())
        ours = self.accelhal_accelerator.op_builder_dir()
        return ours if _importable(ours) else EMPTY_OP_BUILDER_DIR

    def get_op_builder(self, class_name: str) -> type[Any]:
        """The builder class ``class_name``: DeepSpeed's own for this device, else accelhal's.

        DeepSpeed's class comes with its ``jit_load`` built through accelhal's op cache
        (:func:`~accelhal.compat.deepspeed._ops.built_by_accelhal`): built once across
        processes, loaded afterwards without a compiler or ninja.

        A name in ``disable_ops`` gives DeepSpeed's builder with ``is_compatible()`` False
        (DeepSpeed then takes its fallback path); a name nobody builds gives an
        :class:`UnavailableBuilder`. Never ``None``.
        """
        twin = self._twin()
        found = twin.get_op_builder(class_name) if twin is not None else None
        if found is not None and found.__name__ != "NotImplementedBuilder":
            if class_name in self._disabled_ops:
                return _disabled_builder(found, self.accelhal_accelerator.name, class_name)
            return built_by_accelhal(found, self.accelhal_accelerator.name)
        ours = self.accelhal_accelerator.get_op_builder(class_name)
        if not issubclass(ours, NotImplementedBuilder) and class_name not in self._disabled_ops:
            return ours
        return _unavailable_builder(self.accelhal_accelerator.name, class_name)

    def create_op_builder(self, class_name: str) -> Any:
        """An instance of :meth:`get_op_builder`'s class."""
        return self.get_op_builder(class_name)()

    # ---------------------------------------------------------- launcher
    def visible_devices_envs(self) -> list[str]:
        """accelhal's visible-devices variables; where it has none (cpu), DeepSpeed's own for the device.

        DeepSpeed's launcher reads element ``[0]``, so the list is never empty for a device
        DeepSpeed knows (on cpu it is DeepSpeed's placeholder ``['CUDA_VISIBLE_DEVICES']``).
        """
        names = self.accelhal_accelerator.visible_devices_envs()
        if names:
            return names
        twin = self._twin()
        return list(twin.visible_devices_envs()) if twin is not None else []

    def set_visible_devices_envs(
        self, current_env: MutableMapping[str, str], local_accelerator_ids: Sequence[int | str]
    ) -> None:
        """Write the ids into every variable :meth:`visible_devices_envs` names (validated by accelhal)."""
        self.accelhal_accelerator.set_visible_devices_envs(current_env, local_accelerator_ids)
        value = ",".join(str(i).strip() for i in local_accelerator_ids)
        for name in self.visible_devices_envs():
            current_env.setdefault(name, value)


def _pin_memory_aligned(self: _AdapterMembers, tensor: torch.Tensor, align_bytes: int = 1) -> torch.Tensor:
    """accelhal's ``pin_memory(tensor)``: the abstract ``pin_memory(tensor, align_bytes=1)`` of DeepSpeed to 0.19.4.

    DeepSpeed's own backends of those releases ignore ``align_bytes`` (cuda pins with torch,
    cpu returns ``tensor``); so does the adapter: the alignment is the backend's.
    """
    return self.accelhal_accelerator.pin_memory(tensor)


def _amp(self: _AdapterMembers) -> Any:
    """torch's ``amp`` module for the device (``torch.cpu.amp``, ``torch.cuda.amp``), None where torch has none.

    What DeepSpeed's own accelerators answer in the releases that declare ``amp()``.
    """
    return getattr(getattr(torch, self.accelhal_accelerator.device_type, None), "amp", None)


def _pin_memory_hook(self: _AdapterMembers, tensor: torch.Tensor, align_bytes: int = 1) -> torch.Tensor:
    """accelhal's device hook ``_torch_pin_memory(tensor)``: the hook DeepSpeed 0.19.5's ``pin_memory`` calls."""
    return self.accelhal_accelerator._torch_pin_memory(tensor)


WRITTEN: dict[str, Callable[..., Any]] = {
    "pin_memory": _pin_memory_aligned,
    "amp": _amp,
    "_pin_memory": _pin_memory_hook,
}
"""The members a release's shape may name as written by the adapter, by name."""


def _get_rss(self: _AdapterMembers) -> int:
    """DeepSpeed's cpu ``get_rss()``: the process's resident set size (accelhal's ``memory_allocated()``)."""
    return int(self.accelhal_accelerator.memory_allocated())


def _reset_rss(self: _AdapterMembers) -> int:
    """DeepSpeed's cpu ``reset_rss()``: the peak restarts from now (``reset_peak_memory_stats()``); the size now."""
    acc = self.accelhal_accelerator
    acc.reset_peak_memory_stats()
    return int(acc.memory_allocated())


def _create_op_builder(self: _AdapterMembers, op_name: str) -> Any:
    """An instance of :meth:`get_op_builder`'s class (the parameter named as DeepSpeed's cpu names it)."""
    return self.get_op_builder(op_name)()


def _host_device(self: Any, device_index: Any = None) -> None:
    """DeepSpeed's cpu ``device()``: None, which its engine keeps as ``engine.device`` (accelhal checks the index)."""
    adapter_class().device(self, device_index)
    return None


HOST_CHECKED: dict[str, Callable[..., Any]] = {"device": _host_device}
"""Members the host answers as DeepSpeed's ``CPU_Accelerator`` does, after accelhal's check of the arguments."""

HOST_WRITTEN: dict[str, Callable[..., Any]] = {
    "get_rss": _get_rss,
    "reset_rss": _reset_rss,
    "create_op_builder": _create_op_builder,
}
"""The members the adapter writes on the host with the signatures of DeepSpeed's ``CPU_Accelerator`` (``CpuShape``)."""


def _checked(name: str, member: Callable[..., Any], theirs: inspect.Signature | str) -> Callable[..., Any]:
    """``member``, checked to take what the installed DeepSpeed declares for ``name`` (``theirs``)."""
    if isinstance(theirs, str):
        namespace: dict[str, Any] = {}
        exec(f"def declared{theirs}: pass", namespace)  # a signature of the release table: names and literals
        theirs = inspect.signature(namespace["declared"])
    ours = list(inspect.signature(member).parameters.values())
    if [(p.name, p.default) for p in ours] != [(p.name, p.default) for p in theirs.parameters.values()]:
        raise ContractError(
            f"{ADAPTER_CLASS_NAME}.{name}{inspect.signature(member)} does not take DeepSpeed's "
            f"{name}{theirs}: the release's shape in accelhal/compat/deepspeed/_releases.py is wrong"
        )
    return member


def _written(name: str) -> Callable[..., Any]:
    """The adapter's ``name``, checked to take what the installed DeepSpeed declares."""
    return _checked(name, WRITTEN[name], deepspeed_signature(name))


@functools.cache
def adapter_class() -> type[Any]:
    """The generated ``DeepSpeedAccelerator`` subclass (built on first use, then cached).

    Raises :class:`~accelhal.UnsupportedReleaseError` for a DeepSpeed outside the supported range.
    """
    shape = installed_shape()
    base = deepspeed_base()
    handwritten = {n for n, v in vars(_AdapterMembers).items() if not n.startswith("__")}
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": "A DeepSpeed accelerator that delegates every member to an accelhal accelerator.",
    }
    for name, kind in deepspeed_members().items():
        if name in shape.own or name in handwritten or kind == "static":
            continue
        if name in shape.written:
            namespace[name] = _written(name)
        else:
            namespace[name] = _delegate_method(name) if kind == "method" else _delegate_property(name)
    cls = type(ADAPTER_CLASS_NAME, (_AdapterMembers, base), namespace)
    abstract = sorted(getattr(cls, "__abstractmethods__", ()))
    if abstract:  # DeepSpeed declared something this generation does not cover
        raise ContractError(f"{ADAPTER_CLASS_NAME} leaves abstract: {abstract}")
    return cls


@functools.cache
def host_adapter_class() -> type[Any]:
    """The adapter class for an accelerator of device type ``cpu``: a subclass of :func:`adapter_class`.

    The host is DeepSpeed's ``CPU_Accelerator``'s device, and there the adapter answers as that
    class does in the installed release (its shape's :class:`~._releases.CpuShape`): the members it
    names as the class's own are that class's functions (:data:`HOST_CHECKED`: its answers after
    accelhal's check of the arguments); the others it names are written here (:data:`HOST_WRITTEN`),
    with the class's signatures.
    """
    from accelhal.compat.deepspeed._own_import import deepspeed_own_import

    with deepspeed_own_import():
        from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    cpu = installed_shape().cpu
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": "A DeepSpeed accelerator that delegates to an accelhal accelerator of the host, answering as "
        "DeepSpeed's own CPU_Accelerator.",
    }
    for name in sorted(cpu.own):
        own = vars(CPU_Accelerator).get(name)
        if own is not None and name in HOST_CHECKED:
            own = _checked(name, HOST_CHECKED[name], inspect.signature(own))
        if own is None:
            raise ContractError(
                f"DeepSpeed's CPU_Accelerator defines no {name}: the release's shape in "
                "accelhal/compat/deepspeed/_releases.py is wrong"
            )
        namespace[name] = own
    for name, signature in cpu.written.items():
        namespace[name] = _checked(name, HOST_WRITTEN[name], signature)
    return type(ADAPTER_CLASS_NAME, (adapter_class(),), namespace)


def wrap(acc: Accelerator | None, disable_ops: Iterable[str] = ()) -> Any:
    """The adapter over ``acc`` (the active accelerator when ``None``): see ``as_deepspeed_accelerator``."""
    if acc is None:
        from accelhal.selection import get_accelerator

        acc = get_accelerator()
    if not isinstance(acc, Accelerator):
        raise ContractError(
            f"as_deepspeed_accelerator() takes an accelhal.Accelerator (or None for the active one), got "
            f"{type(acc).__qualname__}"
        )
    cls = host_adapter_class() if acc.device_type == "cpu" else adapter_class()
    return cls(acc, checked_ops(disable_ops))


def checked_ops(disable_ops: Iterable[str]) -> tuple[str, ...]:
    """``disable_ops`` as a tuple of op-builder class names, or a ``ContractError`` saying what was wrong."""
    ops = tuple(disable_ops)
    bad = [op for op in ops if not isinstance(op, str) or not op]
    if isinstance(disable_ops, str) or bad:
        raise ContractError(f"disable_ops must be an iterable of op builder class names, got {disable_ops!r}")
    return ops
