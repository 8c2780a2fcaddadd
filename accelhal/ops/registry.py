"""Resolving op builders by backend and class name, through the ``accelhal_register_op_builders`` hook.

The hook is called lazily, on each plugin separately, the first time a builder is looked up; the answers are
cached until :func:`accelhal.reset_accelerator`. An unknown name resolves to a subclass of
:class:`NotImplementedBuilder`, whose :meth:`~NotImplementedBuilder.load` raises
:class:`~accelhal.UnsupportedFeatureError`. See ``docs/ops.md``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from accelhal.contract.spec import is_backend_name
from accelhal.discovery.plugins import Registry, describe_exception, registry
from accelhal.errors import UnsupportedFeatureError
from accelhal.ops.builder import Compatibility, OpBuilder


class NotImplementedBuilder:
    """What an unknown op name resolves to: constructing it works, using it raises.

    >>> builder = get_op_builder("cpu", "NoSuchBuilder")()
    >>> builder.is_compatible()
    False
    >>> builder.compatibility().reason
    "no plugin provides this op builder for 'cpu' (op builders there: FusedAdamWBuilder)"
    >>> builder.load()
    Traceback (most recent call last):
    UnsupportedFeatureError: the 'cpu' accelerator does not support op 'NoSuchBuilder': ...
    """

    backend: str = "?"
    op_name: str = "?"
    known: tuple[str, ...] = ()
    NAME = "not_implemented"

    def _reason(self) -> str:
        known = ", ".join(self.known) or "none"
        return f"no plugin provides this op builder for {self.backend!r} (op builders there: {known})"

    def compatibility(self) -> Compatibility:
        """Always falsy, with the reason."""
        return Compatibility(False, self._reason())

    def is_compatible(self, verbose: bool = False) -> bool:
        """Always False (the reason is :meth:`compatibility`'s)."""
        return False

    def load(self, verbose: bool = True) -> ModuleType:
        """Raise :class:`~accelhal.UnsupportedFeatureError` naming the op and the backend."""
        raise UnsupportedFeatureError(self.backend, f"op {self.op_name!r}", self._reason())

    jit_load = load

    def builder(self) -> Any:
        """Raise, like :meth:`load`: there is nothing to build."""
        return self.load()


@dataclass
class _Resolved:
    registry: Registry
    asked: set[int] = field(default_factory=set)
    builders: dict[str, dict[str, type[OpBuilder]]] = field(default_factory=dict)


_state: _Resolved | None = None
_lock = threading.Lock()


def _resolved() -> _Resolved:
    """The builders registered so far, asking any plugin not asked yet."""
    global _state
    current = registry()
    with _lock:
        if _state is None or _state.registry is not current:
            _state = _Resolved(current)
        _ask_new_plugins(_state)
        return _state


def _ask_new_plugins(state: _Resolved) -> None:
    manager = state.registry.manager
    for impl in manager.hook.accelhal_register_op_builders.get_hookimpls():
        if id(impl.plugin) in state.asked:
            continue
        plugin = impl.plugin_name
        pending: list[tuple[str, type[OpBuilder]]] = []

        def register(backend: str, builder_class: type[OpBuilder], _into: list[Any] = pending) -> None:
            _into.append((backend, builder_class))

        try:
            impl.function(register=register)
        except Exception as exc:  # a plugin's hook may fail in any way: report and skip it
            state.registry.fail(plugin, "op-builders", describe_exception(exc))  # raises under strict mode
            state.asked.add(id(impl.plugin))
            continue
        state.asked.add(id(impl.plugin))
        for backend, builder_class in pending:
            _add(state, plugin, backend, builder_class)


def _add(state: _Resolved, plugin: str, backend: Any, builder_class: Any) -> None:
    if not is_backend_name(backend):
        state.registry.fail(plugin, "op-builders", f"register() needs a backend name first, got {backend!r}")
        return
    if not (isinstance(builder_class, type) and issubclass(builder_class, OpBuilder)):
        state.registry.fail(
            plugin, "op-builders", f"register({backend!r}, ...) needs an OpBuilder subclass, got {builder_class!r}"
        )
        return
    table = state.builders.setdefault(backend, {})
    name = builder_class.__name__
    existing = table.get(name)
    if existing is not None and existing is not builder_class:
        state.registry.fail(
            plugin,
            "op-builders",
            f"op builder {name!r} for {backend!r} is already registered by {existing.__module__}; kept the first",
            backend,
        )
        return
    table[name] = builder_class


def op_builders(backend: str) -> dict[str, type[OpBuilder]]:
    """Every op builder contributed for ``backend``, by class name."""
    return dict(_resolved().builders.get(backend, {}))


def op_builder_dir(backend: str) -> str:
    """The dotted package holding ``backend``'s op builders (DeepSpeed's vocabulary; informative)."""
    return f"accelhal.ops.{backend}"


def get_op_builder(backend: str, name: str) -> type[Any]:
    """The builder class ``name`` contributed for ``backend``, else a :class:`NotImplementedBuilder` subclass.

    >>> get_op_builder("cpu", "FusedAdamWBuilder").__name__
    'FusedAdamWBuilder'
    """
    builders = op_builders(backend)
    found = builders.get(name)
    if found is not None:
        return found
    return type(name, (NotImplementedBuilder,), {"backend": backend, "op_name": name, "known": tuple(sorted(builders))})


def create_op_builder(backend: str, name: str) -> Any:
    """An instance of :func:`get_op_builder`'s answer."""
    return get_op_builder(backend, name)()
