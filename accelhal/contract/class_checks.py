"""Checking that a class honours the contract, and that a backend's class agrees with its spec.

Runs when a backend is selected (``accelhal.get_accelerator()``), in the conformance kit
and in ``accelhal check``. Reading signatures from code objects keeps the check within a
few hundred microseconds for a class of ~80 members.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Iterator
from typing import Any

from accelhal.contract.accelerator import IDENTITY_ATTRIBUTES, Accelerator
from accelhal.contract.constant_members import is_descriptor
from accelhal.contract.spec import SUPPORTED_CONTRACT_VERSIONS, BackendSpec
from accelhal.text import MISSING_MEMBERS


def abstract_members(cls: type) -> list[str]:
    """The abstract members ``cls`` still lacks (empty for an instantiable accelerator)."""
    return sorted(getattr(cls, "__abstractmethods__", ()))


def contract_problems(cls: type) -> list[str]:
    """Every way ``cls`` fails to be a usable accelerator class; empty when it is one.

    Checks: subclass of :class:`Accelerator`; no abstract member left; ``_name`` and
    ``device_type`` set; a supported ``contract_version``; contract members not
    replaced by non-callables; public methods keep the contract's argument names.
    """
    if not (isinstance(cls, type) and issubclass(cls, Accelerator)):
        return [f"{cls!r} is not a subclass of accelhal.Accelerator"]
    problems = []
    missing = abstract_members(cls)
    if missing:
        problems.append(f"{MISSING_MEMBERS}: " + ", ".join(missing))
    for attr in ("_name", "device_type"):
        value = getattr(cls, attr, "")
        if not isinstance(value, str) or not value:
            problems.append(f"class attribute {attr} must be a non-empty string, got {value!r}")
    if cls.contract_version not in SUPPORTED_CONTRACT_VERSIONS:
        problems.append(
            f"declares contract version {cls.contract_version!r}; this accelhal supports "
            f"{list(SUPPORTED_CONTRACT_VERSIONS)}"
        )
    problems.extend(_signature_problems(cls))
    return problems


def contract_members() -> dict[str, object]:
    """The public members of the contract (DeepSpeed's names plus accelhal's), by name."""
    members: dict[str, object] = {}
    for klass in reversed(Accelerator.__mro__):
        for name, value in vars(klass).items():
            if not name.startswith("__"):
                members[name] = value
    return members


def _signature_problems(cls: type[Accelerator]) -> Iterator[str]:
    for name, base_member in vars(Accelerator).items():
        if name.startswith("__") or not inspect.isfunction(base_member):
            continue
        own = _class_attribute(cls, name)
        if isinstance(own, (staticmethod, classmethod)):
            own = own.__func__
        if not callable(own):
            yield f"{name} must be a method, got {own!r}"
            continue
        if own is base_member or not inspect.isfunction(own):
            continue
        expected = _parameter_names(base_member)
        actual = _parameter_names(own)
        if actual[: len(expected)] != expected and not _accepts_anything(own):
            yield f"{name}{inspect.signature(own)} does not keep the contract's arguments {tuple(expected)}"


def _class_attribute(cls: type, name: str) -> Any:
    """``name`` as the class defines it (the raw descriptor), like ``inspect.getattr_static``."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _parameter_names(func: Callable[..., Any]) -> tuple[str, ...]:
    """The names ``inspect.signature(func).parameters`` lists, read from the code object when that is exact.

    A validated class has ~80 members; reading ``__code__`` costs a microsecond where
    ``inspect.signature`` costs tens, and this runs on the first ``get_accelerator()``.
    """
    declared = getattr(func, "__signature__", None)
    if isinstance(declared, inspect.Signature):  # a declared signature is what inspect.signature returns
        return tuple(declared.parameters)
    wrapped = getattr(func, "__wrapped__", None)
    if declared is None and inspect.isfunction(func) and inspect.isfunction(wrapped):
        return _parameter_names(wrapped)  # inspect.signature follows __wrapped__ to the function it names
    code = getattr(func, "__code__", None)
    if code is None or hasattr(func, "__wrapped__") or declared is not None:
        return tuple(inspect.signature(func).parameters)
    positional, keyword_only = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[:positional])
    extra = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        names.append(code.co_varnames[extra])
        extra += 1
    names.extend(code.co_varnames[positional : positional + keyword_only])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[extra])
    return tuple(names)


def _accepts_anything(func: Callable[..., Any]) -> bool:
    kinds = {p.kind for p in inspect.signature(func).parameters.values()}
    return {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} <= kinds


def validate_accelerator_class(cls: type) -> type[Accelerator]:
    """Return ``cls`` if it honours the contract, else raise :class:`ContractError` listing why."""
    problems = contract_problems(cls)
    if problems:
        from accelhal.errors import ContractError  # off the first call's path, which validates without raising

        raise ContractError(f"{getattr(cls, '__qualname__', cls)!r}: " + "; ".join(problems))
    return cls


IDENTITY_ANSWERS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "name": ("name", operator.attrgetter("name")),
    "device_type": ("device_type", operator.attrgetter("device_type")),
    "comm_backend": ("communication_backend_name()", operator.methodcaller("communication_backend_name")),
    "visible_devices_envs": ("visible_devices_envs()", lambda acc: tuple(acc.visible_devices_envs())),
    "export_envs": ("export_envs()", lambda acc: tuple(acc.export_envs())),
}
"""For each spec field, the member that answers it and how to read that answer from an instance."""


def identity_problems(spec: BackendSpec, cls: type[Accelerator]) -> list[str]:
    """Every identity fact on which ``cls`` disagrees with the ``spec`` that registered it.

    For a spec named ``"fakedev"`` whose class says ``_name = "otherdev"``:
    ``["spec name is 'fakedev' but OtherAccelerator._name is 'otherdev'"]``. An attribute
    that is a descriptor (a property) is answered by instances: :func:`instance_identity_problems`.
    """
    problems = []
    for field_name, attribute in IDENTITY_ATTRIBUTES.items():
        if is_descriptor(cls, attribute):
            continue
        declared, answered = getattr(spec, field_name), getattr(cls, attribute, None)
        if isinstance(declared, tuple) and isinstance(answered, (list, tuple)):
            answered = tuple(answered)
        if declared != answered:
            problems.append(f"spec {field_name} is {declared!r} but {cls.__qualname__}.{attribute} is {answered!r}")
    return problems


def instance_identity_problems(spec: BackendSpec, accelerator: Accelerator) -> list[str]:
    """Every identity fact on which a constructed ``accelerator`` answers differently from its ``spec``.

    Catches what the class check cannot see: values set in ``__init__``, properties and
    overridden members (``communication_backend_name()`` returning ``"mpi"`` under a spec
    that says ``"gloo"``).
    """
    problems = []
    owner = type(accelerator).__qualname__
    for field_name, (member, answer) in IDENTITY_ANSWERS.items():
        declared = getattr(spec, field_name)
        try:
            answered = answer(accelerator)
        except Exception as exc:
            problems.append(f"{owner}().{member} raised {type(exc).__name__}: {exc}")
            continue
        if declared != answered:
            problems.append(f"spec {field_name} is {declared!r} but {owner}().{member} is {answered!r}")
    return problems
