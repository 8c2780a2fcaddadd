"""Record classes that cost next to nothing to define: the plain records of discovery and selection.

``@record`` gives a class what :func:`dataclasses.dataclass` gives the records of this package (``__init__``,
defaults and :func:`field` factories, ``__post_init__``, ``__repr__``, ``__eq__``, ``__replace__`` and, with
``frozen=True``, immutability and ``__hash__``), but generates no code when the class is defined. Type checkers
see it as a dataclass transform (PEP 681). An example: ``docs/contributing.md``, "Records"; what it saves:
``docs/performance.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import dataclass_transform
    else:
        from typing_extensions import dataclass_transform

    _T = TypeVar("_T")  # type variables of annotations only: creating them costs the first call
    _C = TypeVar("_C", bound=type)
else:

    def dataclass_transform(**_options: object) -> Callable[[Any], Any]:
        """Run-time stand-in: the transform only informs type checkers."""
        return lambda decorated: decorated


_MISSING: Any = object()


class FrozenRecordError(AttributeError):
    """Raised on assigning to or deleting a field of a frozen record."""


class _Field:
    """A field declared with :func:`field`: a default factory and whether it shows and compares."""

    __slots__ = ("compare", "default_factory", "repr")

    def __init__(self, default_factory: Callable[[], object], compare: bool, repr: bool) -> None:
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def field(*, default_factory: Callable[[], _T], compare: bool = True, repr: bool = True) -> _T:
    """A field whose default is built per instance, like :func:`dataclasses.field`.

    >>> @record
    ... class Bag:
    ...     items: list[str] = field(default_factory=list)
    >>> Bag().items
    []
    """
    declared: Any = _Field(default_factory, compare, repr)
    return declared  # type: ignore[no-any-return]


class _Layout:
    """The fields of one record class, worked out once when the class is decorated."""

    __slots__ = ("compared", "defaults", "names", "shown")

    def __init__(self, cls: type) -> None:
        if any(hasattr(base, "__record_layout__") for base in cls.__mro__[1:]):
            raise TypeError(f"{cls.__qualname__}: a record cannot derive from another record (declare the fields once)")
        annotations: dict[str, object] = cls.__annotations__  # own annotations only, on Python >= 3.10
        names = tuple(n for n, a in annotations.items() if not str(a).startswith(("ClassVar", "typing.ClassVar")))
        self.names = names
        self.defaults: dict[str, object] = {}
        compared, shown = [], []
        for name in names:
            declared = cls.__dict__.get(name, _MISSING)
            if isinstance(declared, _Field):
                delattr(cls, name)  # instances own the value; the class keeps no shared default
            if declared is not _MISSING:
                self.defaults[name] = declared
            elif self.defaults:
                raise TypeError(f"{cls.__qualname__}: field {name!r} without a default follows a field with one")
            if not isinstance(declared, _Field) or declared.compare:
                compared.append(name)
            if not isinstance(declared, _Field) or declared.repr:
                shown.append(name)
        self.compared = tuple(compared)
        self.shown = tuple(shown)

    def values(self, owner: str, args: tuple[object, ...], kwargs: dict[str, object]) -> dict[str, object]:
        """Bind constructor arguments to fields, filling defaults; errors read like Python's own."""
        names = self.names
        if not kwargs and len(args) == len(names):  # every field given in order: nothing to check or fill
            return dict(zip(names, args, strict=True))
        if len(args) > len(names):
            raise TypeError(f"{owner}() takes {len(names)} positional arguments but {len(args)} were given")
        values = dict(zip(names, args, strict=False))  # fewer arguments than fields is fine
        for name, value in kwargs.items():
            if name not in names:
                raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"{owner}() got multiple values for argument {name!r}")
            values[name] = value
        if len(values) < len(names):
            for name in names:
                if name in values:
                    continue
                default = self.defaults.get(name, _MISSING)
                if default is _MISSING:
                    raise TypeError(f"{owner}() missing required argument: {name!r}")
                values[name] = default.default_factory() if isinstance(default, _Field) else default
        return values


def _compared(self: object) -> tuple[object, ...]:
    return tuple(getattr(self, name) for name in type(self).__record_layout__.compared)  # type: ignore[attr-defined]


def _init(self: object, *args: object, **kwargs: object) -> None:
    cls = type(self)
    self.__dict__.update(cls.__record_layout__.values(cls.__qualname__, args, kwargs))  # type: ignore[attr-defined]
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _repr(self: object) -> str:
    shown = type(self).__record_layout__.shown  # type: ignore[attr-defined]
    return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown) + ")"


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        unrelated: bool = NotImplemented
        return unrelated
    return _compared(self) == _compared(other)


def _hash(self: object) -> int:
    return hash(_compared(self))


def _refuse_setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r} of frozen {type(self).__qualname__}")


def _refuse_delattr(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r} of frozen {type(self).__qualname__}")


def _decorate(cls: _C, frozen: bool) -> _C:
    layout = _Layout(cls)
    methods: dict[str, object] = {
        "__record_layout__": layout,
        "__init__": _init,
        "__repr__": _repr,
        "__eq__": _eq,
        "__hash__": _hash if frozen else None,
        "__replace__": replace,
    }
    if frozen:
        methods.update(__setattr__=_refuse_setattr, __delattr__=_refuse_delattr)
    own = cls.__dict__
    for name, method in methods.items():
        defined_by_class = name in own and not (name == "__hash__" and "__eq__" not in own)
        if not defined_by_class:
            setattr(cls, name, method)
    return cls


@overload
def record(cls: _C, /) -> _C: ...


@overload
def record(*, frozen: bool = False) -> Callable[[_C], _C]: ...


@dataclass_transform(field_specifiers=(field,))
def record(cls: _C | None = None, /, *, frozen: bool = False) -> _C | Callable[[_C], _C]:
    """Make ``cls`` a record: ``@record`` (mutable) or ``@record(frozen=True)``.

    A method the class defines itself (``__repr__``, a custom ``__init__``) is kept.
    """
    if cls is None:
        return lambda decorated: _decorate(decorated, frozen)
    return _decorate(cls, frozen)


def replace(instance: _T, **changes: object) -> _T:
    """A copy of a record with some fields changed, like :func:`dataclasses.replace`.

    Fields whose names start with ``_`` (private caches) are not copied: the copy builds
    its own. On Python 3.13+ :func:`copy.replace` does the same.

    >>> @record(frozen=True)
    ... class Limit:
    ...     name: str
    ...     value: int = 1
    >>> replace(Limit("a"), value=5)
    Limit(name='a', value=5)
    """
    fields = {n: v for n, v in record_fields(instance).items() if not n.startswith("_")}
    return type(instance)(**{**fields, **changes})


def record_fields(instance: object) -> dict[str, object]:
    """The fields of a record instance, by name, in declaration order.

    >>> @record
    ... class Pair:
    ...     left: int
    ...     right: int
    >>> record_fields(Pair(1, 2))
    {'left': 1, 'right': 2}
    """
    return {name: getattr(instance, name) for name in type(instance).__record_layout__.names}  # type: ignore[attr-defined]
