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
import logging
import sys
import threading
import time
from typing import TYPE_CHECKING

from accelhal import plain_record
from accelhal.discovery import plugins
from accelhal.discovery.records import CandidateRecord, Decision
from accelhal.process import watchdog
from accelhal.process.settings import Settings
from accelhal.selection.candidates import torch_diagnosis, visible_devices_envs

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.report import DetectionReport

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
            from accelhal.selection.forced import decide_forced, settings_for_forcing

            decision, instance = decide_forced(settings_for_forcing(name), name, "set_accelerator", [])
        else:
            from accelhal.selection.candidates import check_instance

            instance = check_instance(accelerator)
            reg = plugins.current_registry()
            decision = Decision(
                chosen=instance.name,
                rule="set_accelerator",
                explanation=f"set_accelerator() was given an instance of {type(instance).__qualname__}",
                candidates=[],
                plugins=list(reg.plugins) if reg else [],
                failures=list(reg.failures) if reg else [],
                visible_devices_envs=visible_devices_envs(reg),
            )
        decision.seconds = time.perf_counter() - started
        decision.torch = torch_diagnosis()
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
        from accelhal.selection.cascade import probe_the_rest

        probe_the_rest(_decision)
        return DetectionReport.from_decision(_decision)


registry = plugins.registry
"""The plugin registry of this process (owned by :mod:`accelhal.discovery.plugins`)."""


# ---------------------------------------------------------------------------- internals


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
                from accelhal.selection.forced import decide_forced

                decision, instance = decide_forced(
                    settings, settings.accelerator, settings.accelerator_variable, probed
                )
            else:
                from accelhal.selection.cascade import decide_cascade

                decision, instance = decide_cascade(settings, probed)
        except Exception as exc:  # AccelhalError, or a fault of accelhal's own: either way detect() reports it
            _install(None, _failed_decision(exc, probed))
            raise
        finally:
            _selecting.active = False
        decision.seconds = time.perf_counter() - started
        decision.torch = torch_diagnosis()
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
        visible_devices_envs=visible_devices_envs(reg),
        error=f"{type(exc).__name__}: {exc}",
        torch=torch_diagnosis(),
    )
