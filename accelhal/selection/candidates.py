"""One candidate backend: its probe run as a verdict, its class loaded and checked, its instance built."""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from accelhal.contract.spec import BackendSpec, Status, Verdict, contract_version_hint
from accelhal.discovery import plugins
from accelhal.discovery.records import CandidateRecord, Registration
from accelhal.process import torch_import, watchdog
from accelhal.process.settings import Settings
from accelhal.process.vendor_output import stdout_to_stderr

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.errors import PluginError

    _T = TypeVar("_T")  # a type variable of annotations only: creating it costs the first call


def selection_registry(settings: Settings, wanted: str | None = None, wanted_by: str = "") -> plugins.Registry:
    """The registry for a selection: under strict mode, any plugin failure raises here."""
    # strict mode imports every plugin, so that every failure is found
    reg = plugins.registry(settings, wanted=None if settings.strict else wanted, wanted_by=wanted_by)
    error = reg.strict_error()
    if error is not None:
        raise error
    return reg


def probe_candidate(registration: Registration) -> CandidateRecord:
    """Probe one backend; never raises. What it writes to stdout goes to stderr and into the record."""
    spec = registration.spec
    started = time.perf_counter()
    before = plugins.InterpreterState()
    with stdout_to_stderr() as printed:  # the probe's step starts after the look-ups (and import torch)
        verdict = probe_verdict(spec.requires, functools.partial(_announced_probe, registration))
    changed = "; ".join(filter(None, (printed.damage, before.put_back())))
    if changed:  # the process is not what it was: the backend is not usable here
        verdict = Verdict(Status.PROBE_ERROR, f"the probe {changed}")
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


def probe_verdict(requires: tuple[str, ...], probe: Callable[[], Verdict]) -> Verdict:
    """Return what ``probe`` says once ``requires`` import: torch imported once, any raise a ``probe-error`` verdict."""
    import importlib.util

    if "torch" in requires and not torch_import.attempt().loaded:  # one import of torch per process
        diagnosis = torch_diagnosis()
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
        return Verdict(Status.PROBE_ERROR, f"the probe returned {_quoted(verdict)}, not a Verdict")
    return _answer_checked(verdict)


REASON_LIMIT = 500
"""The characters of a probe's reason or hint that a record keeps (a plugin failure's detail keeps as many)."""


def _answer_checked(verdict: Verdict) -> Verdict:
    """``verdict`` if its fields have their types, its texts cut to :data:`REASON_LIMIT`; else a ``probe-error``."""
    status, reason, hint = verdict.status, verdict.reason, verdict.hint
    if not isinstance(status, Status):
        known = isinstance(status, str) and status in {member.value for member in Status}
        wanted = f"Status.{Status(status).name}" if known else "a Status member"
        return Verdict(
            Status.PROBE_ERROR,
            f"the probe returned a Verdict whose status is {_quoted(status)}, not a Status; give {wanted} "
            "(or build it with Verdict.available(), Verdict.no_device(), ...)",
        )
    for field, value in (("reason", reason), ("hint", hint)):
        if not isinstance(value, str) and not (field == "hint" and value is None):
            return Verdict(
                Status.PROBE_ERROR,
                f"the probe returned a Verdict whose {field} is {_quoted(value)}, not a string",
            )
    if len(reason) <= REASON_LIMIT and (hint is None or len(hint) <= REASON_LIMIT):
        return verdict
    from accelhal.text import shorten

    return Verdict(status, shorten(reason, REASON_LIMIT), None if hint is None else shorten(hint, REASON_LIMIT))


def _quoted(value: object) -> str:
    from accelhal.text import quote

    try:
        return quote(value)
    except Exception:  # a repr that raises is the plugin's: its type still names it
        return f"a {type(value).__qualname__} object"


def capturing(record: CandidateRecord, step: Callable[[], _T]) -> _T:
    """Run ``step``; what it writes to stdout goes to stderr and is added to ``record``'s import output."""
    try:
        with stdout_to_stderr() as printed:
            return step()
    finally:
        record.import_output += printed.text


def as_plugin_error(exc: Exception) -> PluginError | None:
    """``exc`` if it is a :class:`~accelhal.PluginError` (whose module is then imported already), else ``None``."""
    from accelhal.errors import PluginError

    return exc if isinstance(exc, PluginError) else None


def mark_invalid(reg: plugins.Registry, record: CandidateRecord, exc: PluginError) -> None:
    """Record a backend whose class failed to load, validate or construct (raises under strict mode)."""
    record.status, record.reason, record.hint = Status.INVALID, f"{exc.stage} failed: {exc.detail}", exc.hint
    reg.fail(exc.plugin, exc.stage, exc.detail, record.name, exc.hint)


def construct(registration: Registration) -> Accelerator:
    """Build the registration's accelerator; raises :class:`~accelhal.PluginError` naming what failed."""
    cls = load_checked(registration)
    spec = registration.spec
    try:
        instance: Accelerator = cls()
    except plugins.PASSED_THROUGH:
        raise
    except BaseException as exc:
        raise plugins.plugin_error(
            registration.plugin.name, "instantiate", f"{spec.accelerator_path}(): {plugins.describe_exception(exc)}"
        ) from exc
    if _checked_by_the_suite(registration, cls):
        return instance
    from accelhal.contract.class_checks import instance_identity_problems

    problems = instance_identity_problems(spec, instance)
    if problems:
        raise plugins.plugin_error(
            registration.plugin.name, "validate", f"{spec.accelerator_path}: " + "; ".join(problems)
        )
    return instance


def load_checked(registration: Registration) -> type[Accelerator]:
    """Import the backend's accelerator class and check it against the contract and its spec.

    Raises :class:`~accelhal.PluginError` (stage ``import`` or ``validate``) naming what is wrong.
    """
    spec = registration.spec
    try:
        plugins.announce_step("instantiate", registration.plugin, spec.name)
        cls = spec.load_class()  # imports torch, which may itself fail to import
    except plugins.PASSED_THROUGH:
        raise
    except BaseException as exc:  # the class's module may fail in any way, sys.exit() included
        raise plugins.plugin_error(
            registration.plugin.name, "import", f"{spec.accelerator_path}: {plugins.describe_exception(exc)}"
        ) from exc
    if _checked_by_the_suite(registration, cls):
        return cls
    from accelhal.contract.class_checks import contract_problems, identity_problems

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
"""Classes whose ``spec`` is the registration's that loaded them (:func:`load_checked`), not one they name."""


def _checked_by_the_suite(registration: Registration, cls: type) -> bool:
    """Whether ``cls`` ships with accelhal and names the very spec that registered it.

    Its identity is then read from that spec when the class is created (a second declaration
    is refused there), and accelhal's test suite checks its instances' answers; selection
    checks neither again (``benchmarks --suite discovery``: importing the checks alone was
    about a tenth of the first call).
    """
    return _ships_with_accelhal(registration, cls) and cls.__dict__.get("spec") is registration.spec


def _ships_with_accelhal(registration: Registration, cls: type) -> bool:
    """Whether ``cls`` is a built-in backend's class, registered by accelhal's own distribution.

    Those classes are checked against the contract by accelhal's test suite
    (``tests/test_backends_without_device.py`` for the named ones, the conformance kit's identity
    tests for the generic one on the test device), so selection does not check them again in
    every process (0.2-0.3 ms of the first call); their identity is still checked against the
    spec, since that depends on the plugin that registered it.
    """
    return registration.plugin.builtin and cls.__module__.partition(".")[0] == "accelhal_backends"


def check_lower_priority(
    reg: plugins.Registry, registration: Registration, record: CandidateRecord, chosen: str
) -> None:
    """An available backend below the chosen one: not used, but its class must be sound (a report shows no sham)."""
    try:
        capturing(record, functools.partial(load_checked, registration))
        record.reason += f"; lower priority than {chosen!r}"
    except Exception as caught:
        if (exc := as_plugin_error(caught)) is None:
            raise
        mark_invalid(reg, record, exc)  # raises under strict mode


def torch_diagnosis() -> torch_import.TorchDiagnosis | None:
    """How ``import torch`` went, with each vendor module's hint on making its runtime load; ``None`` before it ran."""
    if not torch_import.attempted():
        return None
    reg = plugins.current_registry()
    specs: list[BackendSpec] = [r.spec for r in reg.backends.values()] if reg else []
    hints = {module: spec.hint for spec in specs for module in spec.requires if module != "torch" and spec.hint}
    return torch_import.diagnose(hints)


def visible_devices_envs(reg: plugins.Registry | None) -> tuple[str, ...]:
    """The visible-devices variables of every backend ``reg`` registers (none without a registry)."""
    if reg is None:
        return ()
    return tuple(name for registration in reg.backends.values() for name in registration.spec.visible_devices_envs)


def check_instance(accelerator: object) -> Accelerator:
    """Return ``accelerator`` if it is an :class:`~accelhal.Accelerator` honouring the contract, else raise."""
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
