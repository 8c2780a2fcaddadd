"""Plugin discovery: the ``accelhal`` entry-point group, loaded through pluggy.

:func:`discover` loads each entry point (built-ins from accelhal's own distribution
first, then third-party ones in a stable order), applies the allow/block lists and the
autoload switch, calls each plugin's ``accelhal_register_backends`` hook *separately*
(so one broken plugin cannot hide another's registrations) and resolves name conflicts.
Every problem is kept as a :class:`~accelhal.records.Failure`; under ``ACCELHAL_STRICT``
the first one raises :class:`~accelhal.PluginError` instead.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import traceback
from collections.abc import Iterable
from typing import Any

import pluggy

from accelhal import hookspecs
from accelhal._record import field, record
from accelhal.entry_points import find as find_entry_points
from accelhal.errors import ConfigurationError, PluginError
from accelhal.records import Failure, PluginRecord, Registration
from accelhal.settings import Settings
from accelhal.spec import SUPPORTED_CONTRACT_VERSIONS, BackendSpec

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME
BUILTIN_DISTRIBUTION = "accelhal"
FALLBACK_BACKEND = "cpu"
"""The backend that is always registered and always available; it cannot be blocked."""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def describe_exception(exc: BaseException) -> str:
    """``"ExceptionType: message"`` plus the innermost frame, for reports."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


@record
class Registry:
    """The outcome of discovery: registered backends, every plugin seen, and the failures."""

    backends: dict[str, Registration] = field(default_factory=dict)
    plugins: list[PluginRecord] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    manager: pluggy.PluginManager | None = None
    strict: bool = False

    def fail(self, plugin: str, stage: str, detail: str, backend: str | None = None) -> None:
        """Record a failure, or raise it under strict mode."""
        if self.strict:
            raise PluginError(plugin, stage, detail)
        self.failures.append(Failure(plugin, stage, detail, backend))

    def ordered(self) -> list[Registration]:
        """Registrations by descending priority, ties broken by name."""
        return sorted(self.backends.values(), key=lambda r: (-r.spec.priority, r.spec.name))

    def names(self) -> list[str]:
        """Registered backend names, in priority order."""
        return [r.spec.name for r in self.ordered()]


def _entry_points() -> list[metadata.EntryPoint]:
    points = find_entry_points(ENTRY_POINT_GROUP)  # importlib.metadata's answer, cached across processes
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
            meta = dist.metadata
            identities[key] = (meta["Name"], meta["Version"])
        dist_name, version = identities[key]
    return PluginRecord(
        name=ep.name,
        value=ep.value,
        distribution=dist_name,
        distribution_version=version,
        builtin=_normalise(dist_name) == BUILTIN_DISTRIBUTION,
    )


def _gate(record: PluginRecord, settings: Settings) -> str | None:
    """Why ``record`` must not be loaded under ``settings``, or ``None``."""
    names = {record.name.lower(), _normalise(record.distribution)}
    blocked = {_normalise(n) for n in settings.block_plugins} | set(settings.block_plugins)
    if names & blocked:
        return "blocked"
    if record.builtin:
        return None
    if settings.disable_plugin_autoload:
        return "autoload-disabled"
    if settings.plugins is not None:
        allowed = {_normalise(n) for n in settings.plugins} | set(settings.plugins)
        if not names & allowed:
            return "not-allowed"
    return None


_GATE_DETAIL = {
    "blocked": "listed in ACCELHAL_BLOCK_PLUGINS",
    "autoload-disabled": "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD=1 loads only built-in backends",
    "not-allowed": "not listed in ACCELHAL_PLUGINS",
}


def discover(settings: Settings, entry_points: Iterable[metadata.EntryPoint] | None = None) -> Registry:
    """Load the plugins allowed by ``settings`` and collect their backend registrations."""
    if FALLBACK_BACKEND in settings.block_plugins:
        raise ConfigurationError(
            f"ACCELHAL_BLOCK_PLUGINS lists {FALLBACK_BACKEND!r}, the fallback backend, which cannot be "
            "blocked; to avoid it, force another backend with ACCELHAL_ACCELERATOR",
            variable="ACCELHAL_BLOCK_PLUGINS",
            value=",".join(settings.block_plugins),
        )
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    registry = Registry(manager=manager, strict=settings.strict)
    identities: dict[str, tuple[str, str]] = {}
    points = [(ep, _record_for(ep, identities)) for ep in (_entry_points() if entry_points is None else entry_points)]
    points.sort(key=lambda pr: (not pr[1].builtin, _normalise(pr[1].distribution), pr[1].name))
    for ep, entry in points:
        registry.plugins.append(entry)
        gate = _gate(entry, settings)
        if gate is not None:
            entry.state, entry.detail = gate, _GATE_DETAIL[gate]
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # a plugin's import may fail in any way
            entry.state, entry.detail = "failed", describe_exception(exc)
            registry.fail(entry.name, "import", entry.detail)
            continue
        try:
            manager.register(plugin, name=f"{entry.distribution}:{entry.name}")
        except Exception as exc:  # pluggy's validation of the hook implementations
            entry.state, entry.detail = "failed", describe_exception(exc)
            registry.fail(entry.name, "register", entry.detail)
            continue
        _collect_backends(registry, manager, plugin, entry)
    _apply_replacements(registry)
    _drop_claimed_generic(registry)
    return registry


def _collect_backends(registry: Registry, manager: pluggy.PluginManager, plugin: Any, record: PluginRecord) -> None:
    pending: list[BackendSpec] = []

    def register(spec: BackendSpec) -> None:
        if not isinstance(spec, BackendSpec):
            registry.fail(record.name, "register", f"register() takes a BackendSpec, got {spec!r}")
            return
        if spec.contract_version not in SUPPORTED_CONTRACT_VERSIONS:
            registry.fail(
                record.name,
                "validate",
                f"backend {spec.name!r} declares contract version {spec.contract_version}; this accelhal "
                f"supports {list(SUPPORTED_CONTRACT_VERSIONS)} (upgrade accelhal or the plugin)",
                spec.name,
            )
            return
        pending.append(spec)

    for impl in manager.hook.accelhal_register_backends.get_hookimpls():
        if impl.plugin is not plugin:
            continue
        try:
            impl.function(register=register)
        except PluginError:
            raise
        except Exception as exc:
            record.state, record.detail = "failed", describe_exception(exc)
            registry.fail(record.name, "register", record.detail)
            return
    for spec in pending:
        _add(registry, spec, record)


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
        f"(plugin {existing.plugin.name!r}); kept the first registration. To take it over on purpose, "
        f"register with replaces={spec.name!r}",
        spec.name,
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
                )
                continue
            removed = registry.backends.pop(target)
            registration.replaced.append(f"{target} ({removed.plugin.source})")


def _drop_claimed_generic(registry: Registry) -> None:
    """A generic backend stands aside for any other backend registered for its device type."""
    claimed = {r.spec.device_type for r in registry.backends.values() if not r.spec.generic}
    for name, registration in list(registry.backends.items()):
        if registration.spec.generic and registration.spec.device_type in claimed:
            del registry.backends[name]
