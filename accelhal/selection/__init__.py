"""Choosing the active backend: ``set_accelerator`` -> override variable -> priority cascade -> cpu.

The chosen accelerator is cached process-wide. A cached :func:`get_accelerator` is one
global read; the first call takes a lock, so threads racing it build one accelerator
and run detection once. Every decision is kept as a
:class:`~accelhal.discovery.records.Decision` that :func:`detect` returns as a
:class:`~accelhal.report.DetectionReport`.

Fork safety: probes never create a device context, so a process may select its
backend, then fork, and the child can still use the device.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from accelhal import plain_record
from accelhal.contract.spec import BackendSpec, Status, Verdict, contract_version_hint
from accelhal.discovery import plugins
from accelhal.discovery.records import CandidateRecord, Decision, Registration
from accelhal.process import torch_import, watchdog
from accelhal.process.settings import Settings
from accelhal.process.vendor_output import stdout_to_stderr
from accelhal.text import sentence, shorten

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.errors import AccelhalError, BackendUnavailableError, PluginError
    from accelhal.report import DetectionReport

    _T = TypeVar("_T")  # a type variable of annotations only: creating it costs the first call
    _GenericGap = Literal[
        "ambiguous", "blocked", "plugin-failed", "torch", "old-torch", "no-accelerator", "claimed", "undiscovered"
    ]
    """Why :data:`GENERIC_ALIAS` stands for no backend (:attr:`NoGenericBackend.cause`)."""

logger = logging.getLogger("accelhal")

_active: Accelerator | None = None
_decision: Decision | None = None
_last_installed: Accelerator | None = None  # what the cached code returns; never set back to None
_lock = threading.RLock()
_selecting = threading.local()


def get_accelerator() -> Accelerator:
    """The active accelerator, chosen on first use and cached for the process.

    Raises :class:`~accelhal.ConfigurationError` (bad variable),
    :class:`~accelhal.UnknownBackendError` (forced name nobody registers) or
    :class:`~accelhal.BackendUnavailableError` (forced backend unusable here); it
    never falls back silently. Thread-safe. Once an accelerator is cached, the function
    runs the code of ``_Cached.get_accelerator`` (one global read; see ``_install``).

    >>> import accelhal
    >>> accelhal.get_accelerator().device_name()     # on a machine without accelerators
    'cpu'
    """
    accelerator = _active
    if accelerator is None:
        return _select()
    return accelerator


class _Cached:
    """The code ``get_accelerator`` runs while an accelerator is cached (installed by :func:`_install`)."""

    @staticmethod
    def get_accelerator() -> Accelerator:
        return _last_installed  # type: ignore[return-value]  # installed only once it is set


_SELECTING_CODE = get_accelerator.__code__
_CACHED_CODE = _Cached.get_accelerator.__code__.replace(co_name="get_accelerator")
if sys.version_info >= (3, 11):
    _CACHED_CODE = _CACHED_CODE.replace(co_qualname="get_accelerator")


@plain_record.record(frozen=True)
class ActiveSelection:
    """The process's selection state: the active accelerator (``None`` before any) and its decision."""

    accelerator: Accelerator | None
    decision: Decision | None


def snapshot() -> ActiveSelection:
    """The current selection state, to give back to :func:`restore` later."""
    with _lock:
        return ActiveSelection(_active, _decision)


def restore(state: ActiveSelection) -> None:
    """Put back a state taken by :func:`snapshot` (``None`` accelerator: the next call selects again).

    Used by ``accelhal.testing.use_accelerator``; the plugin registry is left as it is.
    """
    with _lock:
        _install(state.accelerator, state.decision)


def _install(instance: Accelerator | None, decision: Decision | None) -> None:
    """The one writer of the selection state (and of ``get_accelerator``'s code). Called with ``_lock`` held.

    DeepSpeed-style code calls ``get_accelerator()`` many times per step. With an accelerator
    cached, ``get_accelerator`` runs ``_Cached.get_accelerator``'s code: exactly as cheap as a
    function returning a module global (``benchmarks/hot_path.py``; the selecting body's extra
    comparison costs ~25%). Every caller holds the same function object, so swapping its
    code reaches all of them; ``inspect.getsource(get_accelerator)`` shows whichever body runs.
    The cached code reads ``_last_installed``, which is never cleared: a call on another
    thread that entered the cached code just before a reset returns the previous accelerator,
    never ``None``.
    """
    global _active, _decision, _last_installed
    if instance is None:
        get_accelerator.__code__ = _SELECTING_CODE  # first, so that every new call selects
        _active, _decision = None, decision
    else:
        _active, _decision = instance, decision
        _last_installed = instance
        get_accelerator.__code__ = _CACHED_CODE


def set_accelerator(accelerator: Accelerator | str) -> Accelerator:
    """Make ``accelerator`` (an instance, or a backend name) the active one; returns it.

    A name is resolved like ``ACCELHAL_ACCELERATOR``: it must be registered and
    available. Replacing an accelerator that other code already captured is allowed
    but logged at INFO.
    """
    with _lock, watchdog.region():  # a step (the instantiation) ends with the selection
        started = time.perf_counter()
        if isinstance(accelerator, str):
            name = accelerator.strip().lower()
            decision, instance = _decide_forced(_settings_for_forcing(name), name, "set_accelerator", [])
        else:
            instance = _check_instance(accelerator)
            reg = plugins.current_registry()
            decision = Decision(
                chosen=instance.name,
                rule="set_accelerator",
                explanation=f"set_accelerator() was given an instance of {type(instance).__qualname__}",
                candidates=[],
                plugins=list(reg.plugins) if reg else [],
                failures=list(reg.failures) if reg else [],
                visible_devices_envs=_visible_devices_envs(reg),
            )
        decision.seconds = time.perf_counter() - started
        decision.torch = _torch_diagnosis()
        if _active is not None and _active is not instance:
            logger.info("accelhal: replacing active accelerator %r with %r", _active.name, instance.name)
        _install(instance, decision)
        return instance


def reset_accelerator() -> None:
    """Forget the cached accelerator, decision and plugin registry (for tests and notebooks).

    The next :func:`get_accelerator` re-reads the environment and re-discovers plugins.
    Objects that captured the old accelerator keep it. Not meant to race with
    :func:`get_accelerator` calls on other threads.
    """
    with _lock:
        _install(None, None)
        plugins.forget_registry()


def detect() -> DetectionReport:
    """The detection report of the active accelerator, running selection if needed.

    Unlike :func:`get_accelerator` it does not raise when selection fails: the report's
    ``error`` says why, and ``chosen`` is ``None``.
    """
    from accelhal.report import DetectionReport

    with _lock, watchdog.region():  # a step (the instantiation) ends with the selection
        if _active is None:
            with contextlib.suppress(Exception):  # the failure is in the decision
                _select()
        assert _decision is not None
        _probe_the_rest(_decision)
        return DetectionReport.from_decision(_decision)


registry = plugins.registry
"""The plugin registry of this process (owned by :mod:`accelhal.discovery.plugins`)."""


# ---------------------------------------------------------------------------- internals
def _selection_registry(settings: Settings, wanted: str | None = None, wanted_by: str = "") -> plugins.Registry:
    """The registry for a selection: under strict mode, any plugin failure raises here."""
    # strict mode imports every plugin, so that every failure is found
    reg = plugins.registry(settings, wanted=None if settings.strict else wanted, wanted_by=wanted_by)
    error = reg.strict_error()
    if error is not None:
        raise error
    return reg


def _settings_for_forcing(name: str) -> Settings:
    from accelhal.process.settings import parse_backend_name

    parse_backend_name("set_accelerator()", name)
    return Settings.from_environ()


def _select() -> Accelerator:
    if getattr(_selecting, "active", False):
        from accelhal.errors import AccelhalError

        raise AccelhalError(
            "get_accelerator() was called while the accelerator is being selected (from a probe or "
            "an accelerator constructor); probes and constructors must not call it"
        )
    with _lock, watchdog.region():  # a step (the instantiation) ends with the selection
        if _active is not None:
            return _active
        _selecting.active = True
        started = time.perf_counter()
        probed: list[CandidateRecord] = []
        try:
            settings = Settings.from_environ()
            if settings.accelerator is not None:
                assert settings.accelerator_variable is not None
                decision, instance = _decide_forced(
                    settings, settings.accelerator, settings.accelerator_variable, probed
                )
            else:
                decision, instance = _decide_cascade(settings, probed)
        except Exception as exc:  # AccelhalError, or a fault of accelhal's own: either way detect() reports it
            _install(None, _failed_decision(exc, probed))
            raise
        finally:
            _selecting.active = False
        decision.seconds = time.perf_counter() - started
        decision.torch = _torch_diagnosis()
        _install(instance, decision)
        return instance


def _failed_decision(exc: Exception, probed: list[CandidateRecord]) -> Decision:
    reg = plugins.current_registry()
    return Decision(
        chosen=None,
        rule="error",
        explanation=str(exc),
        candidates=probed,
        plugins=list(reg.plugins) if reg else [],
        failures=list(reg.failures) if reg else [],
        visible_devices_envs=_visible_devices_envs(reg),
        error=f"{type(exc).__name__}: {exc}",
        torch=_torch_diagnosis(),
    )


def _visible_devices_envs(reg: plugins.Registry | None) -> tuple[str, ...]:
    """The visible-devices variables of every backend ``reg`` registers (none without a registry)."""
    if reg is None:
        return ()
    return tuple(name for registration in reg.backends.values() for name in registration.spec.visible_devices_envs)


def _torch_diagnosis() -> torch_import.TorchDiagnosis | None:
    """How ``import torch`` went, with each vendor module's hint on making its runtime load; ``None`` before it ran."""
    if not torch_import.attempted():
        return None
    reg = plugins.current_registry()
    specs: list[BackendSpec] = [r.spec for r in reg.backends.values()] if reg else []
    hints = {module: spec.hint for spec in specs for module in spec.requires if module != "torch" and spec.hint}
    return torch_import.diagnose(hints)


def _run_probe(registration: Registration) -> CandidateRecord:
    """Probe one backend; never raises. What it writes to stdout goes to stderr and into the record."""
    spec = registration.spec
    started = time.perf_counter()
    with stdout_to_stderr() as printed:  # the probe's step starts after the look-ups (and import torch)
        verdict = _probe_verdict(spec.requires, functools.partial(_announced_probe, registration))
    elapsed = time.perf_counter() - started
    return CandidateRecord.of(
        registration,
        verdict.status,
        verdict.reason,
        hint=spec.verdict_hint(verdict),
        probe_seconds=elapsed,
        import_output=printed.text,
    )


def _announced_probe(registration: Registration) -> Verdict:
    with watchdog.region():
        plugins.announce_step("probe", registration.plugin, registration.spec.name)
        return registration.spec.probe()


def _probe_verdict(requires: tuple[str, ...], probe: Callable[[], Verdict]) -> Verdict:
    import importlib.util

    if "torch" in requires and not torch_import.attempt().loaded:  # one import of torch per process
        diagnosis = _torch_diagnosis()
        assert diagnosis is not None and diagnosis.reason is not None
        return Verdict.broken(diagnosis.reason, hint=diagnosis.hint)
    for module in requires:
        try:
            found = importlib.util.find_spec(module) is not None  # imports the parents of a dotted name
        except plugins.PASSED_THROUGH:
            raise
        except BaseException as exc:
            return Verdict.broken(f"looking up module {module!r} failed: {plugins.describe_exception(exc)}")
        if not found:
            return Verdict.not_installed(f"module {module!r} is not installed")
    try:
        verdict = probe()
    except plugins.PASSED_THROUGH:
        raise
    except BaseException as exc:  # a probe may fail in any way, sys.exit() included: a verdict, not a crash
        return Verdict(Status.PROBE_ERROR, f"the probe raised {plugins.describe_exception(exc)}")
    if not isinstance(verdict, Verdict):
        return Verdict(Status.PROBE_ERROR, f"the probe returned {verdict!r}, not a Verdict")
    return verdict


def _capturing(record: CandidateRecord, step: Callable[[], _T]) -> _T:
    """Run ``step``; what it writes to stdout goes to stderr and is added to ``record``'s import output."""
    try:
        with stdout_to_stderr() as printed:
            return step()
    finally:
        record.import_output += printed.text


def _as_plugin_error(exc: Exception) -> PluginError | None:
    """``exc`` if it is a :class:`~accelhal.PluginError` (whose module is then imported already), else ``None``."""
    from accelhal.errors import PluginError

    return exc if isinstance(exc, PluginError) else None


def _mark_invalid(reg: plugins.Registry, record: CandidateRecord, exc: PluginError) -> None:
    """Record a backend whose class failed to load, validate or construct (raises under strict mode)."""
    record.status, record.reason, record.hint = Status.INVALID, f"{exc.stage} failed: {exc.detail}", exc.hint
    reg.fail(exc.plugin, exc.stage, exc.detail, record.name, exc.hint)


def _construct(registration: Registration) -> Accelerator:
    cls = _load_checked(registration)
    spec = registration.spec
    try:
        instance: Accelerator = cls()
    except plugins.PASSED_THROUGH:
        raise
    except BaseException as exc:
        raise plugins.plugin_error(
            registration.plugin.name, "instantiate", f"{spec.accelerator_path}(): {plugins.describe_exception(exc)}"
        ) from exc
    from accelhal.contract.class_checks import instance_identity_problems

    problems = instance_identity_problems(spec, instance)
    if problems:
        raise plugins.plugin_error(
            registration.plugin.name, "validate", f"{spec.accelerator_path}: " + "; ".join(problems)
        )
    return instance


def _load_checked(registration: Registration) -> type[Accelerator]:
    """Import the backend's accelerator class and check it against the contract and its spec.

    Raises :class:`~accelhal.PluginError` (stage ``import`` or ``validate``) naming what is wrong.
    """
    spec = registration.spec
    try:
        plugins.announce_step("instantiate", registration.plugin, spec.name)
        from accelhal.contract.class_checks import (  # imports torch, which may itself fail to import
            contract_problems,
            identity_problems,
        )

        cls = spec.load_class()
    except plugins.PASSED_THROUGH:
        raise
    except BaseException as exc:  # the class's module may fail in any way, sys.exit() included
        raise plugins.plugin_error(
            registration.plugin.name, "import", f"{spec.accelerator_path}: {plugins.describe_exception(exc)}"
        ) from exc
    checked = [] if _ships_with_accelhal(registration, cls) else contract_problems(cls)
    problems = checked or identity_problems(spec, cls)
    if problems:
        hint = contract_version_hint(getattr(cls, "contract_version", None), registration.plugin.source)
        raise plugins.plugin_error(
            registration.plugin.name, "validate", f"{spec.accelerator_path}: " + "; ".join(problems), hint=hint
        )
    if cls.__dict__.get("spec") is None or cls in _bound_classes:
        type.__setattr__(cls, "spec", spec)  # it names no spec of its own: it reports the one it agrees with
        _bound_classes.add(cls)
    return cls


_bound_classes: weakref.WeakSet[type] = weakref.WeakSet()
"""Classes whose ``spec`` is the registration's that loaded them (:func:`_load_checked`), not one they name."""


def _ships_with_accelhal(registration: Registration, cls: type) -> bool:
    """Whether ``cls`` is a built-in backend's class, registered by accelhal's own distribution.

    Those classes are checked against the contract by accelhal's test suite
    (``tests/test_backends_without_device.py`` for the named ones, the conformance kit's identity
    tests for the generic one on the test device), so selection does not check them again in
    every process (0.2-0.3 ms of the first call); their identity is still checked against the
    spec, since that depends on the plugin that registered it.
    """
    return registration.plugin.builtin and cls.__module__.partition(".")[0] == "accelhal_backends"


GENERIC_ALIAS = "generic"
"""The name that forces the backend the generic plugin offers, for the device type ``torch.accelerator`` reports.

A backend registered under this very name is forced as any other; the alias applies only where none is.
"""


def _decide_forced(
    settings: Settings, name: str, requested_by: str, probed: list[CandidateRecord]
) -> tuple[Decision, Accelerator]:
    """Resolve a backend forced by name or by :data:`GENERIC_ALIAS`; ``probed`` gets its record even if this raises."""
    reg = _selection_registry(settings, name, requested_by)
    registration = reg.backends.get(name)
    if registration is None and reg.load_deferred():  # the index was out of date: import the rest
        registration = reg.backends.get(name)
    alias = ""
    if registration is None and name == GENERIC_ALIAS:
        registration = resolve_generic(reg, requested_by)
        alias, name = name, registration.spec.name
    if registration is None:
        raise unregistered_error(reg, name, requested_by)
    requested = _by_name(requested_by, alias) if alias else requested_by
    record = _run_probe(registration)
    probed.append(record)
    if record.status is not Status.AVAILABLE:
        from accelhal.errors import BackendUnavailableError

        raise BackendUnavailableError(name, record.reason, hint=record.hint, requested_by=requested)
    try:
        instance = _capturing(record, functools.partial(_construct, registration))
    except Exception as caught:
        if (exc := _as_plugin_error(caught)) is None:
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
        candidates=[record, *_not_probed(reg, name, requested_by)],
        plugins=list(reg.plugins),
        failures=list(reg.failures),
        visible_devices_envs=_visible_devices_envs(reg),
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
            f"generic backends are registered for {_names([repr(n) for n in names])}",
            f"{_force(requested_by)} one by its name ({_by_name(requested_by, names[0])})",
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
            f"{_by_name(requested_by, GENERIC_ALIAS)} is ambiguous: {found.reason}; {found.hint}",
            variable=requested_by,
            value=GENERIC_ALIAS,
        )
    from accelhal.errors import BackendUnavailableError

    raise BackendUnavailableError(GENERIC_ALIAS, found.reason, hint=found.hint, requested_by=requested_by)


def _by_name(requested_by: str, name: str) -> str:
    """How ``requested_by`` asks for ``name``: ``VARIABLE=npu``, ``set_accelerator('npu')``, ``accelhal check npu``."""
    if requested_by.startswith("accelhal "):
        return f"{requested_by} {name}"
    return f"{requested_by}({name!r})" if requested_by == "set_accelerator" else f"{requested_by}={name}"


def _force(requested_by: str) -> str:
    """The verb of a hint: a command asks for a backend, a variable or ``set_accelerator`` forces it."""
    return "ask for" if requested_by.startswith("accelhal ") else "force"


def _no_generic_backend(reg: plugins.Registry, requested_by: str) -> tuple[_GenericGap, str, str | None]:
    """Why no generic backend is registered: ``(cause, reason, hint)`` (imports torch: an error path only)."""
    plugin = next((p for p in reg.plugins if p.builtin and p.name == GENERIC_ALIAS), None)
    if plugin is not None and plugin.state != "loaded":
        cause: _GenericGap = "plugin-failed" if plugin.state == "failed" else "blocked"
        return cause, f"the generic plugin is not loaded ({plugin.state}: {plugin.detail})", None
    if not torch_import.attempt().loaded:
        diagnosis = _torch_diagnosis()
        assert diagnosis is not None and diagnosis.reason is not None
        return "torch", diagnosis.reason, diagnosis.hint
    import torch

    from accelhal.contract.probes import GENERIC_OLDEST_TORCH, torch_accelerator_type

    if not hasattr(torch, "accelerator"):  # torch older than 2.6
        return (
            "old-torch",
            f"the generic backend needs torch {GENERIC_OLDEST_TORCH} or later, and this torch {torch.__version__} "
            "is too old: it has no torch.accelerator",
            f"upgrade torch to {GENERIC_OLDEST_TORCH} or later, or {_force(requested_by)} the device's named backend "
            "('accelhal list' lists them)",
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
                f"{_force(requested_by)} that backend by its name ({_by_name(requested_by, name)}), or block its "
                f"plugin (ACCELHAL_BLOCK_PLUGINS={owner}) to leave the device to the generic backend"
            ),
        )
    return (
        "undiscovered",
        f"torch's accelerator {device_type!r} was not reported when the plugins were discovered",
        "import the device's package before accelhal selects (accelhal.reset_accelerator() discovers again)",
    )


def _not_probed(reg: plugins.Registry, chosen: str, requested_by: str) -> list[CandidateRecord]:
    return [
        CandidateRecord.of(r, Status.NOT_PROBED, f"not probed: {requested_by} chose {chosen!r}")
        for r in reg.ordered()
        if r.spec.name != chosen
    ]


def _decide_cascade(settings: Settings, probed: list[CandidateRecord]) -> tuple[Decision, Accelerator]:
    """Probe the registered backends by descending priority and take the first available one.

    The backends below it are left to a report (:func:`_probe_the_rest`): their records say
    so until then. Under strict mode every backend is probed now, so that any failure raises.
    """
    reg = _selection_registry(settings)
    ordered = reg.ordered()
    records: list[CandidateRecord] = []
    unprobed: list[tuple[Registration, CandidateRecord]] = []
    chosen: Accelerator | None = None
    chosen_record: CandidateRecord | None = None
    for position, registration in enumerate(ordered):
        if chosen is not None and not settings.strict:
            unprobed = [(r, _not_probed_yet(r, chosen.name)) for r in ordered[position:]]
            records.extend(record for _, record in unprobed)
            probed.extend(record for _, record in unprobed)
            break
        record = _run_probe(registration)
        records.append(record)
        probed.append(record)
        if record.status is not Status.AVAILABLE:
            if record.status in FAILING and settings.strict:
                raise plugins.plugin_error(record.plugin, "probe", f"{record.name}: {record.reason}")
            continue
        if chosen is not None:  # strict mode only: a lower-priority backend checked now
            _check_lower_priority(reg, registration, record, chosen.name)
            continue
        try:
            chosen = _capturing(record, functools.partial(_construct, registration))
            chosen_record = record
        except Exception as caught:
            if (exc := _as_plugin_error(caught)) is None:
                raise
            _mark_invalid(reg, record, exc)  # raises under strict mode
    if chosen is None or chosen_record is None:
        raise _nothing_available(reg, records)
    decision = Decision(
        chosen=chosen.name,
        rule="fallback" if chosen.name == plugins.FALLBACK_BACKEND else "priority",
        explanation="",
        candidates=records,
        plugins=list(reg.plugins),
        failures=list(reg.failures),
        visible_devices_envs=_visible_devices_envs(reg),
        unprobed=unprobed,
    )
    decision.explanation = _explanation(decision, chosen_record)
    if decision.rule == "fallback":
        failing = sum(record.status in FAILING for record in records)  # doctor's backend-broken findings
        logger.warning("%s", _fallback_warning(len(reg.failures) + failing))
        if logger.isEnabledFor(logging.DEBUG):
            problems = _failure_summary(reg)
            logger.debug(
                "accelhal: the cpu fallback was chosen. Probed: %s.%s",
                _others(decision, chosen_record),
                f" Plugin problems: {problems} ('accelhal doctor' says how to fix them)." if problems else "",
            )
    else:
        logger.info("accelhal: selected %r by priority", chosen.name)
    return decision, chosen


FAILING = frozenset({Status.PROBE_ERROR, Status.BROKEN})
"""The verdicts that are a plugin problem rather than an absence (the probe raised, or the runtime is broken).

The fallback's warning counts them with the plugin failures, ``accelhal info`` lists them among its plugin
problems and ``accelhal doctor`` reports each (``backend-broken``); under ``ACCELHAL_STRICT=1`` they are errors.
"""


def _fallback_warning(plugin_problems: int) -> str:
    """The warning of a cascade that fell back to cpu: one line of at most 120 characters.

    What each probe said is in the DEBUG record beside it, :func:`detect` and ``accelhal explain``.
    """
    problems = ""
    if plugin_problems:
        problems = f"; {plugin_problems} plugin problem{'s' if plugin_problems > 1 else ''}: 'accelhal doctor'"
    return f"accelhal: no accelerator qualified, so cpu is used ('accelhal explain' says why{problems})"


def _failure_summary(reg: plugins.Registry) -> str:
    """The plugin failures of discovery, ``"; "`` between (``""`` when there are none)."""
    if not reg.failures:
        return ""
    from accelhal.errors import plugin_failure

    return "; ".join(f"{plugin_failure(f.plugin, f.stage)}: {shorten(f.detail, 160)}" for f in reg.failures)


def _nothing_available(reg: plugins.Registry, records: list[CandidateRecord]) -> BackendUnavailableError:
    """The error when not even the fallback is available; a cause several backends share is said once.

    (A torch that cannot load makes every backend ``broken`` for the same reason.)
    """
    fallback = next((r for r in records if r.name == plugins.FALLBACK_BACKEND), None)
    others = [r for r in records if r is not fallback]
    message = "no backend is available, not even the cpu fallback"
    if fallback is not None:
        alike = [r.name for r in others if (r.status, r.reason) == (fallback.status, fallback.reason)]
        others = [r for r in others if r.name not in alike]
        message = sentence(f"{message}: {_summary([fallback])}")
        if alike:
            message += (
                f" {_names(alike)} {'is' if len(alike) == 1 else 'are'} {fallback.status.value} for the same reason."
            )
    if others or fallback is None:
        message = sentence(message) + f" Probed: {_summary(others) or 'none registered'}"
    held_back = reg.held_back()
    if held_back:
        message = sentence(message) + f" Held back: {held_back}"
    from accelhal.errors import BackendUnavailableError

    return BackendUnavailableError(
        plugins.FALLBACK_BACKEND, message, hint=fallback.hint if fallback is not None else None
    )


def _names(names: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _summary(records: list[CandidateRecord]) -> str:
    """``name: status (reason)`` for each backend, ``"; "`` between.

    Backends with the same verdict share one entry (``a, b: broken (torch itself cannot load: ...)``),
    so that a shared cause is said once.
    """
    groups: dict[tuple[Status, str], list[str]] = {}
    for record in records:
        groups.setdefault((record.status, record.reason), []).append(record.name)
    return "; ".join(f"{', '.join(names)}: {status.value} ({reason})" for (status, reason), names in groups.items())


def _not_probed_yet(registration: Registration, chosen: str) -> CandidateRecord:
    reason = f"not probed: {chosen!r} has a higher priority; a report (accelhal.detect()) probes it"
    return CandidateRecord.of(registration, Status.NOT_PROBED, reason)


def _check_lower_priority(
    reg: plugins.Registry, registration: Registration, record: CandidateRecord, chosen: str
) -> None:
    """An available backend below the chosen one: not used, but its class must be sound (a report shows no sham)."""
    try:
        _capturing(record, functools.partial(_load_checked, registration))
        record.reason += f"; lower priority than {chosen!r}"
    except Exception as caught:
        if (exc := _as_plugin_error(caught)) is None:
            raise
        _mark_invalid(reg, record, exc)  # raises under strict mode


def _others(decision: Decision, chosen_record: CandidateRecord) -> str:
    """What the other candidates said, for the explanation and the fallback's warning."""
    return _summary([r for r in decision.candidates if r is not chosen_record]) or "no other backend is registered"


def _explanation(decision: Decision, chosen_record: CandidateRecord) -> str:
    if decision.rule == "fallback":
        return f"no accelerator qualified, so the cpu fallback was chosen. Probed: {_others(decision, chosen_record)}"
    return (
        f"{decision.chosen!r} is the available backend with the highest priority "
        f"({chosen_record.priority}); others: {_others(decision, chosen_record)}"
    )


def _probe_the_rest(decision: Decision) -> None:
    """Probe the backends the cascade left below its choice (:attr:`Decision.unprobed`), for a report.

    Each record is filled in place, as the cascade would have filled it; the explanation and
    the failures follow. Called with ``_lock`` held.
    """
    if not decision.unprobed:
        return
    pending, decision.unprobed = decision.unprobed, []
    reg = plugins.current_registry()
    chosen_record = next(r for r in decision.candidates if r.name == decision.chosen)
    for registration, placeholder in pending:
        record = _run_probe(registration)
        if record.status is Status.AVAILABLE and reg is not None and decision.chosen is not None:
            _check_lower_priority(reg, registration, record, decision.chosen)
        for name, value in plain_record.record_fields(record).items():
            setattr(placeholder, name, value)
    if reg is not None:
        decision.failures = list(reg.failures)
    decision.explanation = _explanation(decision, chosen_record)


def _check_instance(accelerator: object) -> Accelerator:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.contract.class_checks import contract_problems
    from accelhal.errors import ContractError

    if not isinstance(accelerator, Accelerator):
        raise ContractError(
            f"set_accelerator() takes an accelhal.Accelerator instance or a backend name, got "
            f"{type(accelerator).__qualname__}; a DeepSpeed accelerator can be wrapped with "
            "accelhal.compat.deepspeed"
        )
    problems = contract_problems(type(accelerator))
    if problems:
        raise ContractError(f"{type(accelerator).__qualname__}: " + "; ".join(problems))
    return accelerator
