"""Run the checks behind ``accelhal doctor``: find what is wrong and say how to fix each.

:func:`diagnose` runs every check in :data:`CHECKS` order and returns a
:class:`~accelhal.cli.output.models.DoctorOutput` whose problems each have a stable ``code``
(their list: ``docs/reference/cli.md``). A check that raises is a ``check-failed`` finding and
the checks after it run. Discovery runs first in a child process
(:mod:`accelhal.cli.diagnosis.discovery_child`), so that a plugin that ends or hangs a process
is named and blocked here. No check creates a device context.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from accelhal.cli.diagnosis.discovery_child import Outcome, run_guarded
from accelhal.cli.output.models import DoctorOutput, Problem, Severity
from accelhal.cli.output.wording import STATUS_PHRASES, distribution_of, failure_fix, failure_title
from accelhal.cli.supervision import faults
from accelhal.contract.spec import Status
from accelhal.errors import ConfigurationError
from accelhal.process import child_processes, torch_import
from accelhal.process.settings import (
    SECONDS_DEFAULTS,
    Settings,
    block_plugins_with,
    parse_backend_name,
    parse_seconds,
)
from accelhal.report import DetectionReport
from accelhal.text import quote, sentence, visible

HIDE_ALL_VALUES = frozenset({"", "-1", "none", "nodevfiles"})
"""Visible-devices values that hide every device."""

OVERRIDE_RULES = frozenset({"ACCELHAL_ACCELERATOR", "DS_ACCELERATOR", "set_accelerator"})
"""Selection rules by which a user chose the backend on purpose."""

_AUTOLOAD = torch_import.AUTOLOAD_VARIABLE
_BLOCK = "ACCELHAL_BLOCK_PLUGINS"
DOCTOR_TIMEOUT = SECONDS_DEFAULTS["ACCELHAL_DOCTOR_TIMEOUT"]
"""Default of ``ACCELHAL_DOCTOR_TIMEOUT``: seconds one plugin step may take in the discovery child."""
SLOW_PLUGIN_SECONDS = SECONDS_DEFAULTS["ACCELHAL_SLOW_PLUGIN_SECONDS"]
"""Default of ``ACCELHAL_SLOW_PLUGIN_SECONDS``: a plugin import or probe slower than this is a warning."""


def _threads() -> list[threading.Thread]:
    return threading.enumerate()


@dataclass
class Context:
    """What the checks share: the environment, the parsed settings and the selection's report."""

    environ: dict[str, str]
    settings: Settings | None = None
    report: DetectionReport | None = None
    torch_imports: bool = True
    discovery_survives: bool = True
    """False when discovery ends or hangs the process for a reason no block can avoid."""
    guard: Outcome | None = None
    step_limit: float = DOCTOR_TIMEOUT
    slow_seconds: float = SLOW_PLUGIN_SECONDS
    problems: list[Problem] = field(default_factory=list)
    threads_before: frozenset[int] = field(default_factory=lambda: frozenset(t.ident or 0 for t in _threads()))
    """Threads already running before the checks (the command's own and a program's), which no plugin started."""


def _bad_variable(ctx: Context, exc: ConfigurationError) -> None:
    variable = exc.variable or "an accelhal variable"
    ctx.problems.append(
        Problem(
            code="bad-variable",
            title=f"{variable} has an invalid value",
            detail=str(exc),
            fix=f"unset {variable} or give it a valid value (see the message)",
        )
    )


def _each_bad_variable(ctx: Context, read: Callable[[Mapping[str, str]], object]) -> object | None:
    """Return what ``read`` makes of the environment; ``None`` after naming each bad variable it refuses.

    ``read`` stops at the first bad variable: it reads again without each one it named, so that one
    run of the doctor names them all.
    """
    environ, bad = dict(ctx.environ), False
    while True:
        try:
            value = read(environ)
        except ConfigurationError as exc:
            _bad_variable(ctx, exc)
            bad = True
            if exc.variable not in environ:
                return None
            del environ[exc.variable]
        else:
            return None if bad else value


def _check_settings(ctx: Context) -> None:
    settings = _each_bad_variable(ctx, Settings.from_environ)
    ctx.settings = settings if isinstance(settings, Settings) else None
    for variable, default, attribute in (
        ("ACCELHAL_DOCTOR_TIMEOUT", DOCTOR_TIMEOUT, "step_limit"),
        ("ACCELHAL_SLOW_PLUGIN_SECONDS", SLOW_PLUGIN_SECONDS, "slow_seconds"),
    ):
        try:
            setattr(ctx, attribute, parse_seconds(variable, ctx.environ.get(variable), default))
        except ConfigurationError as exc:
            _bad_variable(ctx, exc)
    try:  # the command's deadline (the watchdog's is one of the settings)
        parse_seconds("ACCELHAL_TIMEOUT", ctx.environ.get("ACCELHAL_TIMEOUT"), 1.0)
    except ConfigurationError as exc:
        _bad_variable(ctx, exc)
    for read in _readers_beyond_selection():
        _each_bad_variable(ctx, read)


def _readers_beyond_selection() -> tuple[Callable[[Mapping[str, str]], object], ...]:
    """Return the readers of the variables that selection does not read.

    They are a distributed set-up's, the op builders', the vLLM and SGLang bridges' and the DeepSpeed hook's;
    each raises ``ConfigurationError`` naming its variable.
    """
    from accelhal.compat.deepspeed._hook import DISABLE_OPS, ENABLE, parse_disable_ops
    from accelhal.compat.sglang._decision import mode as sglang_mode
    from accelhal.compat.vllm._decision import mode
    from accelhal.process.settings import OpsSettings, dist_timeout, parse_bool

    return (
        dist_timeout,
        OpsSettings.from_environ,
        mode,
        sglang_mode,
        lambda environ: parse_bool(ENABLE, environ.get(ENABLE)),
        lambda environ: parse_disable_ops(environ.get(DISABLE_OPS)),
    )


def _check_override_conflict(ctx: Context) -> None:
    try:
        ours = parse_backend_name("ACCELHAL_ACCELERATOR", ctx.environ.get("ACCELHAL_ACCELERATOR"))
        deepspeeds = parse_backend_name("DS_ACCELERATOR", ctx.environ.get("DS_ACCELERATOR"))
    except ConfigurationError:
        return  # reported by _check_settings
    if ours is not None and deepspeeds is not None and ours != deepspeeds:
        ctx.problems.append(
            Problem(
                code="override-conflict",
                title="ACCELHAL_ACCELERATOR and DS_ACCELERATOR disagree",
                detail=f"ACCELHAL_ACCELERATOR={ours!r} wins in accelhal, but DS_ACCELERATOR={deepspeeds!r} "
                "asks for another backend; code that reads DS_ACCELERATOR (DeepSpeed) would use that one",
                fix=f"set both to the same backend, e.g. DS_ACCELERATOR={ours}, or unset DS_ACCELERATOR",
            )
        )


def _imports_torch(env: dict[str, str], code: str = "import torch") -> tuple[bool, str]:
    """Run ``code`` in a child interpreter with ``env``; (success, last line of stderr).

    The child has ended when it exits (what a vendor package starts there may hold its pipes), and it
    dies with this process (``accelhal.process.child_processes.run``).
    """
    result = child_processes.run([sys.executable, "-c", code], timeout=300, env=env)
    lines = result.stderr.strip().splitlines()
    return result.returncode == 0, lines[-1] if lines else f"exit status {result.returncode}"


def _torch_backend_culprits(env: dict[str, str]) -> list[str]:
    """Each ``torch.backends`` entry point, with its error when loading it fails.

    Read as accelhal reads entry points: a distribution file that is not UTF-8 does not stop the list.
    """
    from accelhal.discovery.entry_points import find

    quiet = {**env, _AUTOLOAD: "0"}
    found = []
    for ep in find("torch.backends"):
        dist = getattr(ep, "dist", None)
        where = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown distribution"
        code = (
            "import torch\nfrom accelhal.discovery.entry_points import find\n"
            f"ep = next(e for e in find('torch.backends') if e.name == {ep.name!r})\n"
            "ep.load()()"
        )
        ok, error = _imports_torch(quiet, code)
        found.append(f"{ep.name} = {ep.value} from {where}: {'loads' if ok else error}")
    return found


def _check_torch_import(ctx: Context) -> None:
    """Run the guarded discovery child (its first step is ``import torch``) and judge that import."""
    ctx.guard = run_guarded(ctx.environ, ctx.step_limit)
    error = ctx.guard.torch_error
    if error is None:
        return
    ctx.torch_imports = False
    if torch_import.autoload_on(ctx.environ) and _imports_torch({**ctx.environ, _AUTOLOAD: "0"})[0]:
        reason, fixes = _torch_diagnosis()
        undecodable = error.startswith(f"{UnicodeDecodeError.__name__}:")  # torch's read of every entry_points.txt
        if undecodable and reason:
            detail = f"{reason} 'import torch' works with {_AUTOLOAD}=0."
        else:
            detail = sentence(
                f"'import torch' fails ({error}) but works with {_AUTOLOAD}=0. torch.backends entry points: "
                + "; ".join(_torch_backend_culprits(ctx.environ))
            )
        culprit = "a distribution file that is not UTF-8" if undecodable else "a vendor package"
        ctx.problems.append(
            Problem(
                code="torch-autoload",
                title=f"{culprit} breaks 'import torch' through torch's backend autoload",
                detail=detail,
                fix=fixes
                or f"Export {_AUTOLOAD}=0 (then import the vendor package yourself), or repair or "
                "uninstall the distribution whose entry point fails.",
            )
        )
        return
    ctx.problems.append(
        Problem(
            code="torch-import",
            title="'import torch' fails",
            detail=error,
            fix="reinstall torch in this environment (accelhal needs a working torch)",
        )
    )


_STAGE_PHRASES = {"import": "being imported", "probe": "probing", "instantiate": "constructing"}
"""How a plugin step reads in a sentence (``"... while the plugin was being imported"``)."""


def _check_isolation(ctx: Context) -> None:
    """Name each plugin that ended or hung the discovery child; later checks run with them blocked.

    Sets ``ACCELHAL_BLOCK_PLUGINS`` in ``os.environ`` for the checks that follow
    (:func:`diagnose` restores it), so that they cannot end this process the same way.
    """
    from accelhal.discovery.plugins import FALLBACK_BACKEND

    guard = ctx.guard
    if guard is None or not ctx.torch_imports:
        return
    block = f"export {_BLOCK}={block_plugins_with(ctx.environ.get(_BLOCK), guard.blocked)}"
    for fault in guard.faults:
        phrase = _STAGE_PHRASES.get(fault.stage, fault.stage)
        if fault.backend:
            phrase += f" backend {fault.backend!r}"
        if fault.hung:
            happened = f"got no further in {ctx.step_limit:g} s (ACCELHAL_DOCTOR_TIMEOUT)"
        else:
            happened = f"ended with {fault.how}"
        last = f" Its last output: {fault.output}" if fault.output else ""
        if fault.plugin == FALLBACK_BACKEND:
            fix = "the cpu fallback cannot be blocked: repair the torch installation (see the output)"
        else:
            fix = f"block it: {block} (or repair or uninstall {fault.source})"
            fix += "; the checks below ran with it blocked" if guard.completed else ""
        ctx.problems.append(
            Problem(
                code="plugin-hung" if fault.hung else "plugin-crashed",
                title=f"plugin {fault.plugin!r} {'hangs' if fault.hung else 'ends the process'} while {phrase}",
                detail=f"{fault.source}: a child process running discovery {happened} while the plugin was "
                f"{phrase}. In-process selection cannot survive this: every program using accelhal here would "
                f"{'hang' if fault.hung else 'end'} the same way.{last}",
                fix=fix,
            )
        )
    if guard.blocked:
        os.environ[_BLOCK] = block_plugins_with(ctx.environ.get(_BLOCK), guard.blocked)
    refused = guard.answer.get("refused")
    ctx.discovery_survives = guard.completed and refused is None  # selection refuses a bad variable
    if refused is not None and ctx.settings is not None:  # one the settings check did not name
        _bad_variable(ctx, ConfigurationError(refused, variable=guard.answer.get("variable")))
    if guard.unexplained is not None:
        ctx.problems.append(
            Problem(
                code="discovery-crashed",
                title="discovery ends the process outside any plugin's code",
                detail=guard.unexplained,
                fix="run 'python -X faulthandler -c \"import accelhal; accelhal.get_accelerator()\"' to see where, "
                "and report it to accelhal",
            )
        )


def _check_slow_plugins(ctx: Context) -> None:
    """Warn about plugin imports and probes slower than ``ACCELHAL_SLOW_PLUGIN_SECONDS`` (the child's figures)."""
    answer = ctx.guard.answer if ctx.guard is not None else {}
    over = f"over ACCELHAL_SLOW_PLUGIN_SECONDS={ctx.slow_seconds:g}"
    slow: list[tuple[str, str, str]] = []
    for name, seconds in answer.get("plugins", []):
        if seconds is not None and seconds > ctx.slow_seconds:
            slow.append(
                (
                    f"plugin {name!r} takes {seconds:.1f} s to import",
                    f"importing the plugin and calling its registration hook took {seconds:.2f} s ({over}); every "
                    "program using accelhal pays it at its first get_accelerator(), unless it forces a backend "
                    "this plugin does not provide",
                    "ask its maintainers to keep the registration module free of heavy imports (name the "
                    f"accelerator class lazily, as 'module:Class'), or block it: {_BLOCK}={name}",
                )
            )
    for backend, plugin, seconds in answer.get("candidates", []):
        if seconds is not None and seconds > ctx.slow_seconds:
            slow.append(
                (
                    f"backend {backend!r} takes {seconds:.1f} s to probe",
                    f"the probe of {backend!r} (plugin {plugin!r}) took {seconds:.2f} s after import torch ({over}); "
                    "every selection that reaches it pays it",
                    f"force the backend you use with ACCELHAL_ACCELERATOR, or block the plugin: {_BLOCK}={plugin}",
                )
            )
    for title, detail, fix in slow:
        ctx.problems.append(Problem(code="plugin-slow", severity=Severity.WARNING, title=title, detail=detail, fix=fix))


def _check_launcher(ctx: Context) -> None:
    """The local rank and size as the backends read them: a value they reject is a problem now, not later."""
    from accelhal.launch import environment as launcher

    try:
        launcher.local_rank(ctx.environ)
        launcher.local_size(ctx.environ)
    except ConfigurationError as exc:
        _bad_variable(ctx, exc)


def _torch_diagnosis() -> tuple[str, str]:
    """The selection's own reason and fixes for a torch that cannot load (this process imports torch once, safely)."""
    from accelhal.selection import detect

    torch = detect().torch
    return (torch.reason or "", " ".join(torch.fixes)) if torch is not None else ("", "")


def _check_selection(ctx: Context) -> None:
    from accelhal.discovery.plugins import describe_exception
    from accelhal.selection import detect

    if not ctx.torch_imports or not ctx.discovery_survives:
        return  # selection needs torch, and must not end this process: the problem above comes first
    # The selection a program sees after ``import torch``, as the child's was, whether or not this
    # process imported torch before: the generic backend asks torch only where torch is loaded.
    torch_import.attempt()
    try:
        ctx.report = report = detect()
    except Exception as exc:  # the doctor reports a crash deep inside selection, it does not repeat it
        ctx.problems.append(
            Problem(
                code="selection-failed",
                title="selecting a backend crashed",
                detail=describe_exception(exc),
                fix="report this to the distribution named in the error (or to accelhal)",
            )
        )
        return
    if report.error is None or ctx.settings is None:
        return  # a bad variable is already reported
    forced = ctx.settings.accelerator
    if ctx.settings.strict and report.error.startswith("PluginError:"):
        blocked = block_plugins_with(ctx.environ.get(_BLOCK), (f.plugin for f in report.failures))
        ctx.problems.append(
            Problem(
                code="selection-failed",
                title="ACCELHAL_STRICT=1 stops selection: a plugin failed",
                detail=f"{report.error}. Under strict mode any plugin failure is an error; every failure is "
                f"listed below ({len(report.failures)} in all)",
                fix=f"repair or block the failing plugin(s): export {_BLOCK}={blocked}, "
                "or unset ACCELHAL_STRICT to have them reported and skipped",
            )
        )
    elif forced is not None:
        from accelhal.selection import registry
        from accelhal.selection.forced import known_names

        variable = ctx.settings.accelerator_variable
        known = known_names(registry())
        remedy = (
            f"make {forced!r} usable ('accelhal explain {forced}' says why it is not)"
            if forced in known
            else f"set it to one of: {', '.join(known)}"
        )
        ctx.problems.append(
            Problem(
                code="forced-unavailable",
                title=f"{variable} forces {forced!r}, which cannot be used here",
                detail=report.error,
                fix=f"unset {variable} to let accelhal choose, or {remedy}",
            )
        )
    else:
        ctx.problems.append(
            Problem(
                code="selection-failed",
                title="no backend could be selected",
                detail=report.error,
                fix="see the plugin problems listed with this one; 'accelhal list' shows every backend's verdict",
            )
        )


def _check_plugins(ctx: Context) -> None:
    report = ctx.report
    if report is None:
        return
    _check_plugin_lists(ctx, report)
    for failure in report.failures:
        ctx.problems.append(
            Problem(
                code="plugin-failed",
                title=failure_title(failure),
                detail=f"{distribution_of(report, failure.plugin)}: {failure.detail}",
                fix=failure_fix(failure, report),
            )
        )
    for candidate in report.candidates:
        if candidate.status in (Status.PROBE_ERROR, Status.BROKEN):
            repair = (
                f"the {candidate.name} driver or runtime (the vendor's own tools say what fails)"
                if candidate.source == "built-in"
                else f"the installation of {candidate.source}"
            )
            ctx.problems.append(
                Problem(
                    code="backend-broken",
                    title=f"backend {candidate.name!r} {STATUS_PHRASES[candidate.status]}",
                    detail=sentence(f"{candidate.source}: {candidate.reason}"),
                    fix=(
                        f"{sentence(candidate.hint, capital=True)} Until then, {_BLOCK}={candidate.plugin} skips it."
                        if candidate.hint
                        else f"Repair {repair}, or skip it with {_BLOCK}={candidate.plugin}."
                    ),
                )
            )


def _check_installed_without_device(ctx: Context) -> None:
    """A notice for each vendor runtime that is installed and loads but sees no device.

    That is a third-party backend, a built-in backend's vendor module, or the device torch itself
    reports (the generic backend: an out-of-tree device that torch loaded). The notice says to run
    the backend's ``device_check_command`` where it declares one.
    """
    from accelhal.selection import registry

    if ctx.report is None or ctx.settings is None:
        return  # no selection, or a bad variable (reported above) that discovery would raise on
    for registration in registry().ordered():
        spec = registration.spec
        candidate = ctx.report.candidate(spec.name)
        vendor = [module for module in spec.requires if module != "torch"]
        third_party = not registration.plugin.builtin
        if candidate is None or candidate.status is not Status.NO_DEVICE or not (vendor or spec.generic or third_party):
            continue  # torch's own device modules (torch.cuda, torch.xpu) are in every torch: no notice
        command = spec.device_check_command
        look = f"run {command} to see what the driver finds" if command else "check its driver and its devices"
        if vendor:
            what = ", ".join(vendor) + " is installed and loads"
        elif third_party:
            what = f"the {spec.name!r} backend of {candidate.source} loads"
        else:
            what = f"torch's accelerator {spec.name!r} loads"
        ctx.problems.append(
            Problem(
                code="no-device",
                severity=Severity.NOTICE,
                title=f"{what}, but sees no {spec.name} device",
                detail=f"{candidate.source}: {sentence(candidate.reason)}",
                fix=f"If this machine should have {spec.name} devices, {look}; "
                f"otherwise nothing needs fixing (accelhal uses {ctx.report.chosen or 'another backend'}).",
            )
        )


def _active_device_count(name: str) -> int | None:
    """The device count of the active backend ``name`` (no device context), else ``None``."""
    from accelhal.selection import get_accelerator

    acc = get_accelerator()
    if acc.name != name:
        return None
    return int(faults.call(name, f"{type(acc).__name__}.device_count()", acc.device_count))


def _visible_devices_problem(variable: str, raw: str, backend: str, status: Status, reason: str) -> Problem | None:
    value = raw.strip()
    if value.lower() in HIDE_ALL_VALUES:
        return Problem(
            code="devices-hidden",
            title=f"{variable}={raw!r} hides every {backend} device",
            detail=f"with this value the {backend} runtime sees no device ({reason})",
            fix=f"unset {variable}, or list the devices to use, e.g. {variable}=0",
        )
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    seen = 0 if status is Status.NO_DEVICE else _active_device_count(backend)
    if seen is None or seen >= len(entries):
        return None
    shown = ", ".join(str(i) for i in range(seen)) or "none"
    return Problem(
        code="devices-missing",
        title=f"{variable}={raw!r} names {len(entries)} {backend} device(s), but {seen} exist",
        detail=f"the {backend} runtime sees {seen} device(s) ({reason}); entries naming no device are "
        "dropped, and some runtimes ignore every entry after the first invalid one",
        fix=f"list only devices that exist (indices visible now: {shown}), or unset {variable}",
    )


def _check_visible_devices(ctx: Context) -> None:
    from accelhal.selection import registry

    if ctx.report is None or ctx.settings is None:
        return
    for registration in registry().ordered():
        candidate = ctx.report.candidate(registration.spec.name)
        if candidate is None or candidate.status not in (Status.AVAILABLE, Status.NO_DEVICE):
            continue  # not installed, or not probed: the variable does not matter now
        for variable in registration.spec.visible_devices_envs:
            raw = ctx.environ.get(variable)
            if raw is None:
                continue
            problem = _visible_devices_problem(variable, raw, candidate.name, candidate.status, candidate.reason)
            if problem is not None:
                ctx.problems.append(problem)


def _torch_current_accelerator() -> str:
    """The device type ``torch.accelerator`` would use (``"cpu"`` when none), without a device context.

    Raises :class:`~accelhal.cli.supervision.faults.RuntimeCallError` when the device's runtime raises.
    """
    import torch

    current = getattr(getattr(torch, "accelerator", None), "current_accelerator", None)
    if current is None:
        raise LookupError("this torch has no torch.accelerator")
    if "check_available" not in inspect.signature(current).parameters:
        try:  # torch 2.6's has no check_available and raises where no accelerator is available
            device = current()
        except RuntimeError:
            device = None
        return "cpu" if device is None else str(device.type)
    device = faults.call("torch", "torch.accelerator.current_accelerator()", current)
    if device is None:
        return "cpu"
    available = faults.call(device.type, "torch.accelerator.is_available()", torch.accelerator.is_available)
    return str(device.type) if available else "cpu"


def _check_torch_accelerator(ctx: Context) -> None:
    from accelhal.selection import get_accelerator, registry

    report = ctx.report
    if report is None or report.chosen is None or report.rule in OVERRIDE_RULES or not ctx.torch_imports:
        return  # an override chose on purpose; nothing to compare without a choice or a torch
    try:
        torch_type = _torch_current_accelerator()
    except LookupError:
        return
    ours = get_accelerator().device_type
    if torch_type == ours:
        return
    matching = [r.spec.name for r in registry().ordered() if r.spec.device_type == torch_type]
    why = (
        f"'accelhal explain {matching[0]}' says why it was not chosen"
        if matching
        else (f"no installed accelhal backend handles device type {torch_type!r}")
    )
    ctx.problems.append(
        Problem(
            code="torch-disagrees",
            title=f"torch.accelerator uses {torch_type!r} but accelhal chose {report.chosen!r}",
            detail=f"torch.accelerator.current_accelerator() is {torch_type!r}; accelhal chose {report.chosen!r} "
            f"(device type {ours!r}) by rule {report.rule!r}; code mixing the two puts tensors on different devices",
            fix=f"{why}; install or repair that backend, or force one with ACCELHAL_ACCELERATOR",
        )
    )


def _check_runtime_answers(ctx: Context) -> None:
    """The active backend's runtime, asked what ``accelhal info`` asks: each wrong answer or raise is a problem."""
    from accelhal.cli.diagnosis.answers import faults_in_a_child
    from accelhal.discovery.plugins import FALLBACK_BACKEND
    from accelhal.selection import get_accelerator

    report = ctx.report
    if report is None or report.chosen is None:
        return
    acc = get_accelerator()
    candidate = report.candidate(acc.name)
    source = candidate.source if candidate is not None else "built-in"
    plugin = candidate.plugin if candidate is not None else acc.name
    repair = (
        f"repair the {acc.name} driver or runtime (the vendor's own tools say what fails)"
        if source == "built-in"
        else f"report it to the authors of {source}, whose runtime answers so"
    )
    if acc.name != FALLBACK_BACKEND:
        repair += f"; until then {_BLOCK}={plugin} skips the backend"
    # the child runs with what the checks run with: plugins _check_isolation blocked stay blocked there
    faults = faults_in_a_child(dict(os.environ), ctx.step_limit, plugin, acc.name)
    if isinstance(faults, str):
        ctx.problems.append(
            Problem(
                code="runtime-error",
                title=f"the {acc.name!r} runtime did not answer what 'accelhal info' asks",
                detail=f"a process that asked it {faults}",
                fix=repair,
            )
        )
        return
    for fault in faults:
        raised = fault.said.startswith("raised ")
        ctx.problems.append(
            Problem(
                code="runtime-error",
                title=f"the {acc.name!r} runtime {'raises in' if raised else 'answers wrongly to'} {fault.call}",
                detail=f"{fault}; 'accelhal info' cannot describe the active backend, and programs that ask "
                f"{fault.call} get the same",
                fix=repair,
            )
        )


def _thread_origin(thread: threading.Thread, report: DetectionReport) -> tuple[str | None, str]:
    """The plugin whose code ``thread`` runs, and where it is: by its stack, else by the function it was given."""
    tops = {p.value.partition(":")[0].split(".")[0]: p.name for p in report.plugins if not p.builtin}
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        top = str(frame.f_globals.get("__name__", "")).split(".")[0]
        if top in tops:
            return tops[top], f"{frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})"
        frame = frame.f_back
    target = getattr(thread, "_target", None) or type(thread).run  # the function it was started with
    top = str(getattr(target, "__module__", "") or "").split(".")[0]
    return tops.get(top), f"{getattr(target, '__qualname__', repr(target))} (module {top or '?'})"


def _check_plugin_threads(ctx: Context) -> None:
    """A thread that is not a daemon, started by plugin code during the checks: programs cannot end while it runs."""
    report = ctx.report
    if report is None:
        return
    for thread in threading.enumerate():
        if thread.daemon or not thread.is_alive() or (thread.ident or 0) in ctx.threads_before:
            continue
        plugin, where = _thread_origin(thread, report)
        name = visible(thread.name)
        if plugin is None:
            suspects = sorted(p.name for p in report.plugins if not p.builtin and p.state == "loaded")
            title = f"a plugin leaves thread {name!r} running, which keeps programs alive"
            detail = (
                f"the thread is not a daemon and runs {where} after discovery, which names no plugin's code; "
                f"the third-party plugins loaded: {', '.join(suspects) or 'none'}"
            )
            fix = f"find the plugin by blocking them one at a time ({_BLOCK}=NAME, then 'accelhal doctor' again)"
        else:
            title = f"plugin {plugin!r} leaves thread {name!r} running, which keeps programs alive"
            detail = f"{distribution_of(report, plugin)}: the thread is not a daemon and runs {where} after discovery"
            fix = f"its authors should start it with daemon=True (or end it); until then {_BLOCK}={plugin} skips it"
        ctx.problems.append(
            Problem(
                code="plugin-thread",
                severity=Severity.WARNING,
                title=title,
                detail=f"{detail}; Python waits for it at the end of every program that uses accelhal, which then "
                "does not end",
                fix=fix,
            )
        )


def _check_plugin_lists(ctx: Context, report: DetectionReport) -> None:
    """A name in a plugin list that no installed plugin answers to: a typo, which holds back nothing."""
    from accelhal.discovery.plugins import names_matching_no_plugin

    if ctx.settings is None:
        return  # a bad list is already reported
    plugins = [(plugin.name, plugin.distribution) for plugin in report.plugins]
    for variable, listed in (("ACCELHAL_PLUGINS", ctx.settings.plugins), (_BLOCK, ctx.settings.block_plugins)):
        for name in names_matching_no_plugin(listed or (), plugins):
            ctx.problems.append(
                Problem(
                    code="plugin-list-unmatched",
                    severity=Severity.WARNING,
                    title=f"{variable} names {quote(name)}, which no installed plugin answers to",
                    detail=f"{variable}={quote(ctx.environ.get(variable, ''))}: a name holds back or lets through "
                    "the plugin whose entry-point or distribution name it is; this one matches none "
                    f"(installed: {', '.join(sorted({plugin.name for plugin in report.plugins}))})",
                    fix=f"correct the name in {variable} (`accelhal list` names every installed plugin), or remove it",
                )
            )


CHECKS: tuple[tuple[str, Callable[[Context], None]], ...] = (
    ("settings", _check_settings),
    ("override-conflict", _check_override_conflict),
    ("torch-import", _check_torch_import),
    ("isolation", _check_isolation),
    ("launcher", _check_launcher),
    ("selection", _check_selection),
    ("plugins", _check_plugins),
    ("slow-plugins", _check_slow_plugins),
    ("no-device", _check_installed_without_device),
    ("visible-devices", _check_visible_devices),
    ("torch-accelerator", _check_torch_accelerator),
    ("runtime-answers", _check_runtime_answers),
    ("plugin-threads", _check_plugin_threads),
)
"""Every check, in the order it runs (later checks use what earlier ones found)."""


def _check_raised(ctx: Context, name: str, exc: Exception) -> None:
    """The finding for a check that vendor or torch code (or accelhal) stopped; the other checks go on."""
    if isinstance(exc, faults.RuntimeCallError):
        device = "torch" if exc.device == "torch" else f"the {exc.device!r} runtime"
        problem = Problem(
            code="runtime-error",
            title=f"{device} raises in {exc.call}",
            detail=f"{faults.exception_text(exc.error)}; the {name} check stopped there, the other checks ran",
            fix="repair the device's driver or runtime (the vendor's own tools say what fails); until then "
            f"{exc.call} raises the same way in every program",
        )
    else:
        problem = Problem(
            code="check-failed",
            title=f"the {name} check raised {type(exc).__name__}",
            detail=f"{faults.describe(exc)}; the other checks ran",
            fix="report this to accelhal, with this detail",
        )
    ctx.problems.append(problem)


def diagnose() -> DoctorOutput:
    """Run every check against this process's environment and selection.

    A check that raises (a device's runtime, torch, or accelhal itself) is a finding, and the
    checks after it still run.
    """
    ctx = Context(environ=dict(os.environ))
    try:
        for name, check in CHECKS:
            try:
                check(ctx)
            except Exception as exc:
                _check_raised(ctx, name, exc)
    finally:  # _check_isolation may have blocked plugins for the checks after it
        os.environ.pop(_BLOCK, None)
        if _BLOCK in ctx.environ:
            os.environ[_BLOCK] = ctx.environ[_BLOCK]
    chosen = ctx.report.chosen if ctx.report else None
    errors = [p for p in ctx.problems if p.severity is Severity.ERROR]
    problems = [  # details and fixes read as sentences, whichever check wrote them
        p.model_copy(update={"detail": sentence(p.detail), "fix": sentence(p.fix, capital=True)}) for p in ctx.problems
    ]
    return DoctorOutput(healthy=not errors, active=chosen, problems=problems, checks=[n for n, _ in CHECKS])
