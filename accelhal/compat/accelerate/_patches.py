"""Reversible replacements: a class attribute, or a function wherever a loaded module holds it.

A :class:`ClassPatch` replaces one attribute in a class's own namespace and puts the
original back. A :class:`FunctionPatch` replaces a module-level function in every loaded
module that holds it (the module defining it, and each that did ``from ... import`` it),
so modules imported later get the replacement from the defining module; reverting puts the
original back wherever the replacement is held, those later modules included.

:data:`APPLIED` is the one record of what is in place; :func:`apply` and :func:`revert_all`
are its only writers.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol

from accelhal.plain_record import record


class Patch(Protocol):
    """A replacement that can be put in place and taken back."""

    def apply(self) -> None:
        """Put the replacement in place."""

    def revert(self) -> None:
        """Put the original back where the replacement is (a no-op where something else replaced it since)."""


@record(frozen=True)
class ClassPatch:
    """``owner.<name>`` (a method, property or descriptor of the class itself) replaced by ``replacement``."""

    owner: type[Any]
    name: str
    original: Any
    """What the class defined when the patch was built."""
    replacement: Any

    @classmethod
    def of(cls, owner: type[Any], name: str, replace: Callable[[Any], Any]) -> ClassPatch:
        """The patch of ``owner.<name>`` by ``replace(original)``."""
        original = owner.__dict__[name]
        return cls(owner, name, original, replace(original))

    def apply(self) -> None:
        """Replace the class's attribute."""
        setattr(self.owner, self.name, self.replacement)

    def revert(self) -> None:
        """Put the original back where the replacement still is."""
        if self.owner.__dict__.get(self.name) is self.replacement:
            setattr(self.owner, self.name, self.original)


@record(frozen=True)
class FunctionPatch:
    """The function ``original`` replaced by ``replacement`` in every loaded module that holds it."""

    original: Callable[..., Any]
    replacement: Callable[..., Any]

    @classmethod
    def of(cls, module: ModuleType, name: str, replace: Callable[[Any], Callable[..., Any]]) -> FunctionPatch:
        """The patch of the function ``module.<name>`` by ``replace(original)``."""
        original = getattr(module, name)
        return cls(original, replace(original))

    def apply(self) -> None:
        """Bind ``replacement`` wherever ``original`` is bound."""
        rebind({self.original: self.replacement})

    def revert(self) -> None:
        """Bind ``original`` wherever ``replacement`` is bound."""
        rebind({self.replacement: self.original})


APPLIED: list[Patch] = []
"""The patches in place, in the order they were applied."""

_lock = threading.RLock()


def rebind(replacements: Mapping[Callable[..., Any], Callable[..., Any]]) -> None:
    """In every loaded module, bind each new function under every name that holds its old one (one pass)."""
    wanted = {id(old): (old, new) for old, new in replacements.items()}
    if not wanted:
        return
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or wanted.keys().isdisjoint(map(id, namespace.values())):
            continue  # the common case, decided without a Python-level loop over the namespace
        for name, value in list(namespace.items()):
            pair = wanted.get(id(value))
            if pair is not None and value is pair[0]:
                namespace[name] = pair[1]


def apply(patches: Sequence[Patch]) -> None:
    """Put ``patches`` in place and record them; all or none (a failure reverts those applied).

    The function patches among them are bound in one pass over the loaded modules.
    """
    functions = [patch for patch in patches if isinstance(patch, FunctionPatch)]
    with _lock:
        done: list[Patch] = []
        try:
            for patch in patches:
                if not isinstance(patch, FunctionPatch):
                    patch.apply()
                    done.append(patch)
            rebind({patch.original: patch.replacement for patch in functions})
            done.extend(functions)
        except BaseException:
            _revert(done)
            raise
        APPLIED.extend(done)


def _revert(patches: list[Patch]) -> None:
    rebind({patch.replacement: patch.original for patch in patches if isinstance(patch, FunctionPatch)})
    for patch in reversed(patches):
        if not isinstance(patch, FunctionPatch):
            patch.revert()


def revert_all() -> None:
    """Take back every recorded patch."""
    with _lock:
        _revert(APPLIED)
        APPLIED.clear()


def any_applied() -> bool:
    """Whether any patch is in place."""
    return bool(APPLIED)
