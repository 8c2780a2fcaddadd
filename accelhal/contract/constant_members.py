"""Compile the contract's constant members per backend class, their answer a literal in the code.

:func:`bake` gives a backend class a method for each member of :data:`CONSTANT_MEMBERS` it does
not define itself, and its ``*Tensor`` factories; assigning an answering attribute later re-bakes
(:func:`rebake_tree`, :func:`bake_instance`). This module is the only writer of baked members.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

from accelhal.text import quote

_PLACEHOLDER = "accelhal: constant placeholder"


def _constant_template(self: Any) -> Any:
    return "accelhal: constant placeholder"


def _device_name_template(self: Any, device_index: int | None = None) -> Any:
    if device_index is None:
        return "accelhal: constant placeholder"
    return self._indexed_device_name(device_index)


def _on_accelerator_template(self: Any, tensor: Any) -> Any:
    try:  # free on the taken path (zero-cost exception handling)
        return tensor.device.type == "accelhal: constant placeholder"
    except AttributeError:
        raise TypeError(f"on_accelerator takes a torch.Tensor, got {quote(tensor)}") from None


CONSTANT_MEMBERS: dict[str, tuple[str, Callable[..., Any]]] = {
    "is_synchronized_device": ("_is_synchronized_device", _constant_template),
    "use_host_timers": ("_uses_host_timers", _constant_template),
    "resolves_data_dependency": ("_resolves_data_dependency", _constant_template),
    "handles_memory_backpressure": ("_handles_memory_backpressure", _constant_template),
    "communication_backend_name": ("_communication_backend_name", _constant_template),
    "device_name": ("device_type", _device_name_template),
    "on_accelerator": ("device_type", _on_accelerator_template),
}
"""Member -> (the attribute holding its answer, the template whose placeholder becomes that answer)."""

BAKED_ATTRIBUTES = frozenset(attribute for attribute, _ in CONSTANT_MEMBERS.values())
"""The attributes whose assignment re-bakes (``device_type`` also rebuilds the tensor factories)."""

FACTORY_DTYPES: dict[str, str] = {}
"""Class attribute holding a ``*Tensor`` factory -> the torch dtype name it makes."""


def tensor_factory_property(dtype_name: str, doc: str) -> property:
    """Return a ``*Tensor`` property: ``acc.FloatTensor`` returns ``factory(data) -> tensor``.

    It reads the ``functools.partial(torch.tensor, dtype=..., device=<device_type>)`` that
    :func:`bake` stores on each backend class.
    """
    attribute = f"_{dtype_name}_tensor_factory"
    FACTORY_DTYPES[attribute] = dtype_name
    return property(operator.attrgetter(attribute), doc=inspect.cleandoc(doc))


def _constant_member(base: Callable[..., Any], value: object, template: Callable[..., Any]) -> Callable[..., Any]:
    """Return a function with ``base``'s name, signature and docstring: ``template`` with ``value`` as a literal."""
    code = template.__code__
    code = code.replace(co_consts=tuple(value if c == _PLACEHOLDER else c for c in code.co_consts))
    member = types.FunctionType(code, template.__globals__, base.__name__, template.__defaults__)
    functools.update_wrapper(member, base)
    member._accelhal_constant = True  # type: ignore[attr-defined]
    return member


def _is_baked_or_base(cls: type, base: type, member: str) -> bool:
    current = getattr(cls, member)
    return current is getattr(base, member) or getattr(current, "_accelhal_constant", False)


def bake(cls: type, base: type) -> None:
    """Give ``cls`` (a subclass of the contract class ``base``) its constant members and tensor factories."""
    import torch

    for member, (attribute, template) in CONSTANT_MEMBERS.items():
        if not _is_baked_or_base(cls, base, member):
            continue
        if is_descriptor(cls, attribute):  # a property answers per instance: the contract's own member reads it
            type.__setattr__(cls, member, getattr(base, member))
            continue
        constant = _constant_member(getattr(base, member), getattr(cls, attribute), template)
        constant.__qualname__ = f"{cls.__qualname__}.{member}"
        type.__setattr__(cls, member, constant)
    for attribute, dtype_name in FACTORY_DTYPES.items():
        factory = functools.partial(torch.tensor, dtype=getattr(torch, dtype_name), device=cls.device_type)  # type: ignore[attr-defined]
        type.__setattr__(cls, attribute, factory)


def is_descriptor(cls: type, attribute: str) -> bool:
    """Return whether ``cls`` defines ``attribute`` as a descriptor (a property), which instances answer."""
    raw = next((klass.__dict__[attribute] for klass in cls.__mro__ if attribute in klass.__dict__), None)
    return hasattr(type(raw), "__get__")


def rebake_tree(cls: type, base: type) -> None:
    """Bake ``cls`` and every subclass of it (after a baked attribute changed on ``cls``)."""
    pending = [cls]
    while pending:
        klass = pending.pop()
        if klass is not base:
            bake(klass, base)
        pending.extend(klass.__subclasses__())


def bake_instance(instance: Any, attribute: str, base: type) -> None:
    """Re-bake, on ``instance`` only, the members answered by ``attribute`` (just assigned on it)."""
    cls = type(instance)
    value = getattr(instance, attribute)
    for member, (source, template) in CONSTANT_MEMBERS.items():
        if source == attribute and _is_baked_or_base(cls, base, member):
            constant = _constant_member(getattr(base, member), value, template)
            object.__setattr__(instance, member, types.MethodType(constant, instance))
    if attribute == "device_type":
        import torch

        for factory_attribute, dtype_name in FACTORY_DTYPES.items():
            factory = functools.partial(torch.tensor, dtype=getattr(torch, dtype_name), device=value)
            object.__setattr__(instance, factory_attribute, factory)


def unbake_instance(instance: Any, attribute: str) -> None:
    """Drop what :func:`bake_instance` put on ``instance`` for ``attribute`` (just deleted from it)."""
    for member, (source, _) in CONSTANT_MEMBERS.items():
        if source == attribute and getattr(instance.__dict__.get(member), "_accelhal_constant", False):
            del instance.__dict__[member]
    if attribute == "device_type":
        for factory_attribute in FACTORY_DTYPES:
            instance.__dict__.pop(factory_attribute, None)


def unbaked_state(state: dict[str, Any]) -> dict[str, Any]:
    """Return ``state`` (an instance's ``__dict__``) without the members and factories baked on the instance."""
    return {
        name: value
        for name, value in state.items()
        if name not in FACTORY_DTYPES and not getattr(value, "_accelhal_constant", False)
    }
