"""A backend forced by name (``ACCELHAL_ACCELERATOR``, ``set_accelerator``): resolved, probed, built, or refused."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from accelhal.contract.spec import Status
from accelhal.discovery import plugins
from accelhal.discovery.records import CandidateRecord, Decision, DecisionRule
from accelhal.process.settings import Settings
from accelhal.selection.candidates import (
    as_plugin_error,
    capturing,
    construct,
    probe_candidate,
    selection_registry,
    visible_devices_envs,
)
from accelhal.selection.generic import GENERIC_ALIAS, by_name, resolve_generic
from accelhal.text import shorten

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.errors import AccelhalError


def settings_for_forcing(name: str) -> Settings:
    """Check ``name`` as ``set_accelerator()`` was given it, then read the settings."""
    from accelhal.process.settings import parse_backend_name

    parse_backend_name("set_accelerator()", name)
    return Settings.from_environ()


def decide_forced(
    settings: Settings, name: str, requested_by: DecisionRule, probed: list[CandidateRecord]
) -> tuple[Decision, Accelerator]:
    """Resolve a backend forced by name or by :data:`GENERIC_ALIAS`; ``probed`` gets its record even if this raises."""
    reg = selection_registry(settings, name, requested_by)
    registration = reg.backends.get(name)
    if registration is None and reg.load_deferred():  # the index was out of date: import the rest
        registration = reg.backends.get(name)
    alias = ""
    if registration is None and name == GENERIC_ALIAS:
        registration = resolve_generic(reg, requested_by)
        alias, name = name, registration.spec.name
    if registration is None:
        raise unregistered_error(reg, name, requested_by)
    requested = by_name(requested_by, alias) if alias else requested_by
    record = probe_candidate(registration)
    probed.append(record)
    if record.status is not Status.AVAILABLE:
        from accelhal.errors import BackendUnavailableError

        raise BackendUnavailableError(name, record.reason, hint=record.hint, requested_by=requested)
    try:
        instance = capturing(record, functools.partial(construct, registration))
    except Exception as caught:
        if (exc := as_plugin_error(caught)) is None:
            raise
        record.status, record.reason, record.hint = Status.INVALID, exc.detail, exc.hint
        if settings.strict:
            raise
        from accelhal.errors import BackendUnavailableError

        raise BackendUnavailableError(
            name, f"{exc.stage} failed: {exc.detail}", hint=exc.hint, requested_by=requested
        ) from exc
    requested_name = f"{alias!r}, the backend of torch's accelerator {name!r}," if alias else repr(name)
    decision = Decision(
        chosen=name,
        rule=requested_by,
        explanation=f"{requested_name} was requested by {requested_by}; its probe says: {record.reason}",
        candidates=[record, *not_probed(reg, name, requested_by)],
        plugins=list(reg.plugins),
        failures=list(reg.failures),
        visible_devices_envs=visible_devices_envs(reg),
    )
    return decision, instance


def unregistered_error(reg: plugins.Registry, name: str, requested_by: str) -> AccelhalError:
    """The error for asking for ``name``, which no registered backend has (``requested_by`` asked).

    :class:`~accelhal.BackendUnavailableError` where the plugin that would provide it (whose entry
    point or distribution is called ``name``) failed to load: its error cut to 160 characters,
    ``accelhal doctor`` has the whole. Else :class:`~accelhal.UnknownBackendError`, with the
    known names and why a plugin of that name was held back, if one was.
    """
    plugin = next((p for p in reg.plugins if name in (p.name, p.distribution.lower()) and p.state != "loaded"), None)
    if plugin is not None and plugin.state == "failed":
        from accelhal.errors import BackendUnavailableError

        return BackendUnavailableError(
            name,
            f"the plugin that would provide it, {plugin.name!r} ({plugin.source}), failed to load: "
            f"{shorten(plugin.detail, 160)}",
            hint="'accelhal doctor' shows its whole error and how to fix it",
            requested_by=requested_by,
        )
    from accelhal.errors import UnknownBackendError

    hint = f"its plugin is not loaded: {plugin.detail}" if plugin is not None else ""
    return UnknownBackendError(name, known_names(reg), variable=requested_by, hint=hint)


def known_names(reg: plugins.Registry) -> list[str]:
    """The names that may be asked for: the registered backends in priority order, then :data:`GENERIC_ALIAS`.

    Every list of known names (errors, ``accelhal explain``, ``accelhal doctor``) is this one.
    """
    names = reg.names()
    return names if GENERIC_ALIAS in names else [*names, GENERIC_ALIAS]


def not_probed(reg: plugins.Registry, chosen: str, requested_by: str) -> list[CandidateRecord]:
    """Record every backend other than ``chosen`` as not probed, since ``requested_by`` chose."""
    return [
        CandidateRecord.of(r, Status.NOT_PROBED, f"not probed: {requested_by} chose {chosen!r}")
        for r in reg.ordered()
        if r.spec.name != chosen
    ]
