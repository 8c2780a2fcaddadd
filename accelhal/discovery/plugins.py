"""Discover the plugins of the ``accelhal`` entry-point group and collect their backends.

:func:`discover` loads each plugin (the built-in ones first) and calls its hooks one plugin at a
time, so one broken plugin cannot hide another's registrations; every problem is kept as a
:class:`~accelhal.discovery.records.Failure`, and under ``ACCELHAL_STRICT`` the selection raises
the first (:meth:`Registry.strict_error`). The fallback backend's plugin (``cpu``) cannot be blocked.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata as metadata
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from accelhal.contract.spec import SUPPORTED_CONTRACT_VERSIONS, BackendSpec, contract_version_hint
from accelhal.discovery import hooks
from accelhal.discovery.entry_points import find as find_entry_points
from accelhal.discovery.entry_points import name_and_version
from accelhal.discovery.records import Failure, FailureStage, PluginRecord, PluginState, Registration
from accelhal.plain_record import field, record
from accelhal.process import watchdog
from accelhal.process.settings import Settings
from accelhal.process.vendor_output import Captured, stdout_to_stderr
from accelhal.text import quote, shorten

if TYPE_CHECKING:
    import pluggy

    from accelhal.discovery.plugin_index import Index
    from accelhal.errors import PluginError

ENTRY_POINT_GROUP = hooks.PROJECT_NAME
BUILTIN_DISTRIBUTION = "accelhal"
FALLBACK_BACKEND = "cpu"
"""The backend that is always registered and always available; it cannot be blocked."""
PASSED_THROUGH: tuple[type[BaseException], ...] = (KeyboardInterrupt, GeneratorExit)
"""The exceptions that go through accelhal from a plugin's import, hook or probe (the user's
interrupt and a generator's shutdown); anything else, ``SystemExit`` included, is that plugin's failure."""


def announce_step(kind: str, plugin: PluginRecord, backend: str = "") -> None:
    """Start the step in which ``plugin``'s code runs, as :func:`accelhal.process.watchdog.enter` does.

    ``kind`` is ``import`` (the plugin's module and hook), ``probe`` or ``instantiate``
    (``backend``'s probe or constructor). The watchdog's listener may refuse the step (it
    raises: call this where the step's own failures are contained).
    """
    watchdog.enter(kind, plugin.name, backend, source=plugin.source)


@functools.lru_cache(maxsize=1024)
def _normalise(name: str) -> str:
    """A distribution or plugin name as packaging compares it (each name is normalised once per process)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def describe_exception(exc: BaseException) -> str:
    """``"ExceptionType: message"`` plus the innermost frame (unless the message names the place), for reports."""
    frames = [] if getattr(exc, "names_its_place", False) else traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    message = shorten(str(exc), 500)
    return f"{type(exc).__name__}{': ' + message if message else ''}{where}"


@record
class Registry:
    """The outcome of discovery: registered backends, every plugin seen, and the failures."""

    backends: dict[str, Registration] = field(default_factory=dict)
    plugins: list[PluginRecord] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    strict: bool = False
    deferred: list[tuple[metadata.EntryPoint, PluginRecord]] = field(default_factory=list)
    """Plugins not imported because they do not concern the forced backend (see :meth:`load_deferred`)."""
    unregistered: list[tuple[Any, PluginRecord]] = field(default_factory=list, repr=False)
    """Plugins loaded without pluggy (built-in modules), which :attr:`manager` registers when it is built."""
    _manager: list[pluggy.PluginManager] = field(default_factory=list, compare=False, repr=False)

    @property
    def manager(self) -> pluggy.PluginManager:
        """pluggy's manager with every loaded plugin registered, in discovery order; built on first use.

        Building it imports pluggy, which the first ``get_accelerator()`` of a process with only
        the built-in plugins never needs (see :mod:`accelhal.discovery.pluggy_manager`).
        """
        with _registry_lock:
            if not self._manager:
                from accelhal.discovery.pluggy_manager import new_manager

                self._manager.append(new_manager())
            manager = self._manager[0]
            pending, self.unregistered = self.unregistered, []
            for plugin, entry in pending:
                try:
                    manager.register(plugin, name=_pluggy_name(entry))
                except Exception as exc:  # pluggy's validation of the hook implementations
                    entry.state, entry.detail = "failed", describe_exception(exc)
                    self.fail(entry.name, "register", entry.detail)
            return manager

    def fail(
        self, plugin: str, stage: FailureStage, detail: str, backend: str | None = None, hint: str | None = None
    ) -> None:
        """Record a failure; under strict mode, then raise it."""
        self.failures.append(Failure(plugin, stage, detail, backend, hint))
        if self.strict:
            raise plugin_error(plugin, stage, detail, hint)

    def strict_error(self) -> PluginError | None:
        """Under strict mode, the error for the first failure of discovery; else ``None``."""
        if not self.strict or not self.failures:
            return None
        first = self.failures[0]
        more = len(self.failures) - 1
        detail = first.detail + (f" (and {more} more plugin failure(s); 'accelhal doctor' lists them)" if more else "")
        return plugin_error(first.plugin, first.stage, detail, first.hint)

    def load_deferred(self) -> bool:
        """Import the deferred plugins and add their registrations; False when there were none."""
        if not self.deferred:
            return False
        from accelhal.discovery.plugin_index import Index

        pending, self.deferred = self.deferred, []
        strict, self.strict = self.strict, False  # failures are collected, as in discover()
        try:
            index = Index()
            for ep, entry in pending:
                entry.state, entry.detail = "loaded", ""
                with watchdog.region():  # the plugin's import step ends with its load
                    _load(self, ep, entry, index)
            _apply_replacements(self)
            _drop_claimed_generic(self)
            index.save()
        finally:
            self.strict = strict
        return True

    def held_back(self) -> str:
        """Which settings held which plugins back (``""`` when none did): for "nothing is available" errors."""
        reasons: dict[str, list[str]] = {}
        for plugin in self.plugins:
            if plugin.state in _GATE_VARIABLE:
                reasons.setdefault(_GATE_VARIABLE[plugin.state], []).append(plugin.name)
        failed = [p.name for p in self.plugins if p.state == "failed"]
        parts = [f"{variable} held back {', '.join(names)}" for variable, names in reasons.items()]
        if failed:
            parts.append(f"plugin(s) {', '.join(failed)} failed to load")
        return "; ".join(parts)

    def ordered(self) -> list[Registration]:
        """Registrations by descending priority, ties broken by name."""
        return sorted(self.backends.values(), key=lambda r: (-r.spec.priority, r.spec.name))

    def names(self) -> list[str]:
        """Registered backend names, in priority order."""
        return [r.spec.name for r in self.ordered()]


def _entry_points(refresh: bool = False) -> list[metadata.EntryPoint]:
    points = find_entry_points(ENTRY_POINT_GROUP, refresh=refresh)  # importlib.metadata's answer, cached
    seen: set[tuple[str, str]] = set()
    unique = []
    for ep in points:  # the same distribution can sit twice on sys.path
        key = (ep.name, ep.value)
        if key not in seen:
            seen.add(key)
            unique.append(ep)
    return unique


def _record_for(ep: metadata.EntryPoint, identities: dict[str, tuple[str, str]]) -> PluginRecord:
    """The record of ``ep``; ``identities`` caches each distribution's (name, version).

    Reading a distribution's metadata parses its ``METADATA`` file every time, and one
    distribution usually carries several entry points (accelhal's own carries nine).
    """
    dist = getattr(ep, "dist", None)
    if dist is None:
        dist_name, version = "?", "?"
    else:
        key = str(getattr(dist, "_path", id(dist)))
        if key not in identities:
            identities[key] = name_and_version(dist)
        dist_name, version = identities[key]
    return PluginRecord(
        name=ep.name,
        value=ep.value,
        distribution=dist_name,
        distribution_version=version,
        builtin=_normalise(dist_name) == BUILTIN_DISTRIBUTION,
    )


def is_fallback(record: PluginRecord) -> bool:
    """Whether ``record`` is the entry point of the fallback backend (built-in ``cpu``), which no list holds back."""
    return record.builtin and record.name == FALLBACK_BACKEND


def _names_of(name: str, distribution: str) -> set[str]:
    """What a plugin list may call one plugin: its entry-point name, or its distribution's name."""
    return {name.lower(), _normalise(distribution)}


def _listing(names: Iterable[str]) -> set[str]:
    """The names of a plugin list, as :func:`_names_of` compares them."""
    listed = tuple(names)
    return {_normalise(n) for n in listed} | set(listed)


def names_matching_no_plugin(listed: Iterable[str], plugins: Iterable[tuple[str, str]]) -> list[str]:
    """Return the names of a plugin list that none of ``plugins`` answers to: typos, which hold back nothing.

    ``listed`` is ``ACCELHAL_PLUGINS`` or ``ACCELHAL_BLOCK_PLUGINS`` as parsed; ``plugins`` are
    ``(entry-point name, distribution)`` pairs, as :func:`_gate` compares them.
    """
    known = set().union(*(_names_of(name, distribution) for name, distribution in plugins))
    return [name for name in listed if not _listing([name]) & known]


def _gate(record: PluginRecord, settings: Settings) -> PluginState | None:
    """Why ``record`` must not be loaded under ``settings``, or ``None``."""
    if is_fallback(record):
        return None
    names = _names_of(record.name, record.distribution)
    if names & _listing(settings.block_plugins):
        return "blocked"
    if record.builtin:
        return None
    if settings.disable_plugin_autoload:
        return "autoload-disabled"
    if settings.plugins is not None and not names & _listing(settings.plugins):
        return "not-allowed"
    return None


_GATE_DETAIL = {
    "blocked": "listed in ACCELHAL_BLOCK_PLUGINS",
    "autoload-disabled": "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD=1 loads only built-in backends",
    "not-allowed": "not listed in ACCELHAL_PLUGINS",
}
_GATE_VARIABLE = {
    "blocked": "ACCELHAL_BLOCK_PLUGINS",
    "autoload-disabled": "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD",
    "not-allowed": "ACCELHAL_PLUGINS",
}


def discover(
    settings: Settings,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
    *,
    wanted: str | None = None,
    wanted_by: str = "",
) -> Registry:
    """Load the plugins allowed by ``settings`` and collect their backend registrations.

    Never raises for a plugin's failure (see :meth:`Registry.strict_error`). ``wanted``, a
    backend name forced by ``wanted_by``, defers the third-party plugins that
    :mod:`accelhal.discovery.plugin_index` knows do not concern it.
    """
    if FALLBACK_BACKEND in settings.block_plugins:  # parsed lists are trimmed and lower-cased
        from accelhal.errors import ConfigurationError

        raise ConfigurationError(
            f"ACCELHAL_BLOCK_PLUGINS lists {FALLBACK_BACKEND!r}, the fallback backend, which cannot be "
            "blocked; to avoid it, force another backend with ACCELHAL_ACCELERATOR",
            variable="ACCELHAL_BLOCK_PLUGINS",
            value=",".join(settings.block_plugins),
        )
    registry = Registry()
    identities: dict[str, tuple[str, str]] = {}
    found = _entry_points() if entry_points is None else list(entry_points)
    points = [(ep, _record_for(ep, identities)) for ep in found]
    if entry_points is None and not any(is_fallback(entry) for _, entry in points):
        found = _entry_points(refresh=True)  # a cache that lost accelhal's own distribution is not believed
        points = [(ep, _record_for(ep, identities)) for ep in found]
    points.sort(key=lambda pr: (not pr[1].builtin, _normalise(pr[1].distribution), pr[1].name))
    index = None
    if any(not entry.builtin for _, entry in points):
        from accelhal.discovery.plugin_index import Index

        index = Index()
    for ep, entry in points:
        registry.plugins.append(entry)
        gate = _gate(entry, settings)
        if gate is not None:
            entry.state, entry.detail = gate, _GATE_DETAIL[gate]
            continue
        known = index.lookup(ep) if index is not None and wanted and not entry.builtin else None
        if known is not None and not known.concerns(wanted or ""):
            registered = ", ".join(repr(n) for n in known.backends) or "no backend"
            entry.state = "deferred"
            entry.detail = (
                f"not imported: {wanted_by} forces {wanted!r}; this plugin registered {registered} when last imported"
            )
            registry.deferred.append((ep, entry))
            continue
        with watchdog.region():  # the plugin's import step ends with its load
            _load(registry, ep, entry, index)
    _apply_replacements(registry)
    _drop_claimed_generic(registry)
    if index is not None:
        index.save()
    registry.strict = settings.strict
    return registry


def plugin_error(plugin: str, stage: FailureStage, detail: str, hint: str | None = None) -> PluginError:
    """The :class:`~accelhal.PluginError` of a failure at ``stage``.

    :mod:`accelhal.errors` is imported here, when there is an error to raise: defining its
    classes would cost every first ``get_accelerator()``.
    """
    from accelhal.errors import PluginError

    return PluginError(plugin, stage, detail, hint=hint)


class _InterpreterChangedError(Exception):
    """A plugin changed the interpreter under the code after it (its message says how); accelhal undid what it could."""


class InterpreterState:
    """What plugin code must leave as it found it: Python's recursion limit, ``sys.stdout`` and ``sys.stderr``.

    Taken before a plugin's import or a probe; :meth:`put_back` then undoes what the code changed.
    """

    __slots__ = ("limit", "stderr", "stdout")

    def __init__(self) -> None:
        self.limit = sys.getrecursionlimit()
        self.stdout, self.stderr = sys.stdout, sys.stderr

    def put_back(self) -> str | None:
        """Undo what was changed since; what the code did (a predicate), or ``None`` when it changed nothing."""
        changes = []
        now = sys.getrecursionlimit()
        if now < self.limit:
            sys.setrecursionlimit(self.limit)
            changes.append(
                f"lowers Python's recursion limit from {self.limit} to {now} (sys.setrecursionlimit), under which "
                "torch and accelhal fail with RecursionError; accelhal put the limit back"
            )
        replaced = [name for name in ("stdout", "stderr") if getattr(sys, name) is not getattr(self, name)]
        if replaced:
            sys.stdout, sys.stderr = self.stdout, self.stderr
            streams = " and ".join(f"sys.{name}" for name in replaced)
            changes.append(
                f"replaces {streams}, so that what the program prints would go where the plugin chose; "
                f"accelhal put {'them' if len(replaced) > 1 else 'it'} back"
            )
        return "; ".join(changes) or None


def _keep_interpreter(before: InterpreterState) -> None:
    """Put back what a plugin's import changed of the interpreter, and raise to name what it did."""
    changed = before.put_back()
    if changed is not None:
        raise _InterpreterChangedError(f"it {changed} and did not load the plugin")


def _pluggy_name(entry: PluginRecord) -> str:
    return f"{entry.distribution}:{entry.name}"


def _load(registry: Registry, ep: metadata.EntryPoint, entry: PluginRecord, index: Index | None) -> None:
    """Import one plugin, collect its backends and register it with pluggy; its failures are recorded.

    A built-in plugin module's registration hook is found and called without pluggy, which
    registers it when :attr:`Registry.manager` is built; any other plugin is registered at
    once, so that pluggy's validation of its hooks is one of discovery's failures.
    """
    started = time.perf_counter()
    before = InterpreterState()
    try:
        try:
            # accelhal's own plugin modules print nothing: only another distribution's import is guarded (~10 us)
            with contextlib.nullcontext(Captured()) if entry.builtin else stdout_to_stderr() as printed:
                announce_step("import", entry)
                plugin = ep.load()
            _keep_interpreter(before)
            if printed.damage:
                raise _InterpreterChangedError(f"it {printed.damage}")
        except PASSED_THROUGH:
            raise
        except BaseException as exc:  # a plugin's import may fail in any way, sys.exit() included
            # a RecursionError under a limit the plugin lowered is the limit's doing: that is what is named
            entry.state = "failed"
            if isinstance(exc, _InterpreterChangedError):
                entry.detail = str(exc)  # what it did, in words: the exception is accelhal's
            else:
                changed = before.put_back()
                entry.detail = f"it {changed} and did not load the plugin" if changed else describe_exception(exc)
            registry.fail(entry.name, "import", entry.detail)
            return
        finally:
            entry.output = printed.text
        functions = hooks.plugin_hooks(plugin, "accelhal_register_backends") if entry.builtin else None
        if functions is None:
            manager = registry.manager
            try:
                manager.register(plugin, name=_pluggy_name(entry))
            except Exception as exc:  # pluggy's validation of the hook implementations
                entry.state, entry.detail = "failed", describe_exception(exc)
                registry.fail(entry.name, "register", entry.detail)
                return
            functions = [
                i.function for i in manager.hook.accelhal_register_backends.get_hookimpls() if i.plugin is plugin
            ]
        else:
            registry.unregistered.append((plugin, entry))
        specs = _collect_backends(registry, functions, entry)
    finally:
        entry.import_seconds = time.perf_counter() - started
    if index is not None and specs is not None and not entry.builtin:
        from accelhal.discovery.plugin_index import Registered

        op_builders = any(
            impl.plugin is plugin for impl in registry.manager.hook.accelhal_register_op_builders.get_hookimpls()
        )
        replaces = tuple(s.replaces for s in specs if s.replaces)
        index.remember(ep, Registered(tuple(s.name for s in specs), replaces, op_builders))


def _collect_backends(
    registry: Registry, hooks: list[Callable[..., Any]], record: PluginRecord
) -> list[BackendSpec] | None:
    """Call the plugin's ``hooks`` and add what they register; the specs offered, or ``None`` when a hook failed."""
    pending: list[BackendSpec] = []
    offered: list[BackendSpec] = []

    def register(spec: BackendSpec) -> None:
        if not isinstance(spec, BackendSpec):
            registry.fail(record.name, "register", f"register() takes a BackendSpec, got {quote(spec)}")
            return
        offered.append(spec)
        if spec.contract_version not in SUPPORTED_CONTRACT_VERSIONS:
            registry.fail(
                record.name,
                "validate",
                f"backend {spec.name!r} declares contract version {spec.contract_version}; this accelhal "
                f"supports {list(SUPPORTED_CONTRACT_VERSIONS)}",
                spec.name,
                contract_version_hint(spec.contract_version, record.source),
            )
            return
        pending.append(spec)

    for hook in hooks:
        try:
            hook(register=register)
        except PASSED_THROUGH:
            raise
        except BaseException as exc:  # a hook may fail in any way, sys.exit() included
            record.state, record.detail = "failed", describe_exception(exc)
            registry.fail(record.name, "register", record.detail)
            return None
    for spec in pending:
        _add(registry, spec, record)
    return offered


def _add(registry: Registry, spec: BackendSpec, record: PluginRecord) -> None:
    existing = registry.backends.get(spec.name)
    if existing is None:
        registry.backends[spec.name] = Registration(spec, record)
        return
    if existing.spec.generic != spec.generic:  # a named backend and the generic one: the named one wins
        if existing.spec.generic:
            registry.backends[spec.name] = Registration(spec, record)
        return
    if spec.replaces == spec.name and existing.spec.replaces != spec.name:
        registry.backends[spec.name] = Registration(spec, record, [*existing.replaced, existing.plugin.source])
        return
    registry.fail(
        record.name,
        "conflict",
        f"backend name {spec.name!r} is already registered by {existing.plugin.source} "
        f"(plugin {existing.plugin.name!r}); kept the first registration",
        spec.name,
        f"block one of the two plugins (ACCELHAL_BLOCK_PLUGINS={record.name}), or, if {record.source} is meant to "
        f"take {spec.name!r} over, its spec must say replaces={spec.name!r}",
    )


def _apply_replacements(registry: Registry) -> None:
    """A spec with ``replaces=<other name>`` removes that other backend from the candidates."""
    for registration in list(registry.backends.values()):
        target = registration.spec.replaces
        if target and target != registration.spec.name and target in registry.backends:
            if target == FALLBACK_BACKEND:
                registry.fail(
                    registration.plugin.name,
                    "conflict",
                    f"backend {registration.spec.name!r} may not replace the fallback backend 'cpu'",
                    registration.spec.name,
                    f"ask the maintainers of {registration.plugin.source} to drop replaces='cpu' (the "
                    "fallback cannot be replaced under another name; a backend named 'cpu' with replaces='cpu' can)",
                )
                continue
            removed = registry.backends.pop(target)
            registration.replaced.append(f"{target} ({removed.plugin.source})")


# ---------------------------------------------------------------------------- the process's registry
_registry: Registry | None = None
_registry_lock = threading.RLock()


def registry(settings: Settings | None = None, wanted: str | None = None, wanted_by: str = "") -> Registry:
    """The plugin registry of this process, discovered on first use (``settings`` read from the environment).

    This module owns it: selection, the op builders and the CLI all read this one. ``wanted``
    and ``wanted_by`` are :func:`discover`'s, for the first discovery only (a forced backend).
    """
    global _registry
    with _registry_lock:
        if _registry is None:
            settings = Settings.from_environ() if settings is None else settings
            _registry = discover(settings, wanted=wanted, wanted_by=wanted_by)
        return _registry


def current_registry() -> Registry | None:
    """The registry if discovery has run in this process, else ``None`` (discovers nothing)."""
    return _registry


def forget_registry() -> None:
    """Drop the registry: the next :func:`registry` call discovers the plugins again."""
    global _registry
    with _registry_lock:
        _registry = None


def _drop_claimed_generic(registry: Registry) -> None:
    """A generic backend stands aside for any other backend registered for its device type."""
    claimed = {r.spec.device_type for r in registry.backends.values() if not r.spec.generic}
    for name, registration in list(registry.backends.items()):
        if registration.spec.generic and registration.spec.device_type in claimed:
            del registry.backends[name]
