"""The ``generic`` alias: the backend the generic plugin offers for the device ``torch.accelerator`` reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from accelhal import plain_record
from accelhal.discovery import plugins
from accelhal.discovery.records import Registration
from accelhal.process import torch_import
from accelhal.selection.candidates import torch_diagnosis
from accelhal.selection.messages import joined

if TYPE_CHECKING:
    _GenericGap = Literal[
        "ambiguous", "blocked", "plugin-failed", "torch", "old-torch", "no-accelerator", "claimed", "undiscovered"
    ]
    """Why :data:`GENERIC_ALIAS` stands for no backend (:attr:`NoGenericBackend.cause`)."""


GENERIC_ALIAS = "generic"
"""The name that forces the backend the generic plugin offers, for the device type ``torch.accelerator`` reports.

A backend registered under this very name is forced as any other; the alias applies only where none is.
"""


@plain_record.record(frozen=True)
class NoGenericBackend:
    """Why :data:`GENERIC_ALIAS` stands for no backend here (:func:`generic_backend`'s answer)."""

    cause: _GenericGap
    """``ambiguous`` (several generic backends), ``blocked`` or ``plugin-failed`` (the generic plugin is
    not loaded), ``torch`` (torch cannot load), ``old-torch`` (it has no ``torch.accelerator``: older than
    2.6, and the generic backend needs 2.10), ``no-accelerator``, ``claimed`` (another backend serves
    torch's accelerator) or ``undiscovered`` (torch reports it now, not when the plugins were discovered)."""
    reason: str
    hint: str | None = None


def generic_backend(reg: plugins.Registry, requested_by: str) -> Registration | NoGenericBackend:
    """The one backend a generic plugin offers (:attr:`~accelhal.BackendSpec.generic`), or why there is none.

    What :data:`GENERIC_ALIAS` stands for, where no backend has that name. ``requested_by`` is
    who asks, as the hints name it: a variable (``ACCELHAL_ACCELERATOR``), ``set_accelerator``
    or a command (``accelhal explain``). Imports torch where no generic backend is offered.
    """
    offered = [r for r in reg.backends.values() if r.spec.generic]
    if len(offered) == 1:
        return offered[0]
    if offered:
        names = sorted(r.spec.name for r in offered)
        return NoGenericBackend(
            "ambiguous",
            f"generic backends are registered for {joined([repr(n) for n in names])}",
            f"{force_verb(requested_by)} one by its name ({by_name(requested_by, names[0])})",
        )
    cause, why, hint = _no_generic_backend(reg, requested_by)
    if cause != "old-torch":
        why = f"no device torch.accelerator reports is left to the generic backend: {why}"
    return NoGenericBackend(cause, why, hint)


def resolve_generic(reg: plugins.Registry, requested_by: str) -> Registration:
    """:func:`generic_backend`'s backend; where there is none, raises saying why.

    Raises :class:`~accelhal.ConfigurationError` (several generic backends) or
    :class:`~accelhal.BackendUnavailableError` (none: the reason and what to do).
    """
    found = generic_backend(reg, requested_by)
    if isinstance(found, Registration):
        return found
    if found.cause == "ambiguous":
        from accelhal.errors import ConfigurationError

        raise ConfigurationError(
            f"{by_name(requested_by, GENERIC_ALIAS)} is ambiguous: {found.reason}; {found.hint}",
            variable=requested_by,
            value=GENERIC_ALIAS,
        )
    from accelhal.errors import BackendUnavailableError

    raise BackendUnavailableError(GENERIC_ALIAS, found.reason, hint=found.hint, requested_by=requested_by)


def by_name(requested_by: str, name: str) -> str:
    """How ``requested_by`` asks for ``name``: ``VARIABLE=npu``, ``set_accelerator('npu')``, ``accelhal check npu``."""
    if requested_by.startswith("accelhal "):
        return f"{requested_by} {name}"
    return f"{requested_by}({name!r})" if requested_by == "set_accelerator" else f"{requested_by}={name}"


def force_verb(requested_by: str) -> str:
    """The verb of a hint: a command asks for a backend, a variable or ``set_accelerator`` forces it."""
    return "ask for" if requested_by.startswith("accelhal ") else "force"


def _no_generic_backend(reg: plugins.Registry, requested_by: str) -> tuple[_GenericGap, str, str | None]:
    """Why no generic backend is registered: ``(cause, reason, hint)`` (imports torch: an error path only)."""
    plugin = next((p for p in reg.plugins if p.builtin and p.name == GENERIC_ALIAS), None)
    if plugin is not None and plugin.state != "loaded":
        cause: _GenericGap = "plugin-failed" if plugin.state == "failed" else "blocked"
        return cause, f"the generic plugin is not loaded ({plugin.state}: {plugin.detail})", None
    if not torch_import.attempt().loaded:
        diagnosis = torch_diagnosis()
        assert diagnosis is not None and diagnosis.reason is not None
        return "torch", diagnosis.reason, diagnosis.hint
    import torch

    from accelhal.contract.probes import GENERIC_OLDEST_TORCH, torch_accelerator_type

    if not hasattr(torch, "accelerator"):  # torch older than 2.6
        return (
            "old-torch",
            f"the generic backend needs torch {GENERIC_OLDEST_TORCH} or later, and this torch {torch.__version__} "
            "is too old: it has no torch.accelerator",
            f"upgrade torch to {GENERIC_OLDEST_TORCH} or later, or {force_verb(requested_by)} the device's named "
            "backend ('accelhal list' lists them)",
        )
    device_type = torch_accelerator_type()
    if device_type is None or device_type == "cpu":
        return (
            "no-accelerator",
            "torch reports no accelerator (torch.accelerator.current_accelerator() is None)",
            "install the device's torch package (torch's device autoload imports it) or import it before selecting",
        )
    serving = [r for r in reg.ordered() if r.spec.device_type == device_type]
    if serving:
        name, owner = serving[0].spec.name, serving[0].plugin.name
        return (
            "claimed",
            f"torch's accelerator is {device_type!r}, which the {name!r} backend serves",
            (
                f"{force_verb(requested_by)} that backend by its name ({by_name(requested_by, name)}), or block its "
                f"plugin (ACCELHAL_BLOCK_PLUGINS={owner}) to leave the device to the generic backend"
            ),
        )
    return (
        "undiscovered",
        f"torch's accelerator {device_type!r} was not reported when the plugins were discovered",
        "import the device's package before accelhal selects (accelhal.reset_accelerator() discovers again)",
    )
