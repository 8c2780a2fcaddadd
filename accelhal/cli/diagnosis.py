"""The checks behind ``accelhal doctor``: find what is wrong and say how to fix it.

:func:`diagnose` runs every check in :data:`CHECKS` order and returns a
:class:`~accelhal.cli.models.DoctorOutput`. Each check returns
:class:`~accelhal.cli.models.Problem` objects with a stable ``code``:

``bad-variable``, ``override-conflict``, ``torch-autoload``, ``torch-import``,
``forced-unavailable``, ``selection-failed``, ``plugin-failed``, ``backend-broken``,
``devices-hidden``, ``devices-missing``, ``torch-disagrees``; and one notice (severity
``notice``, which leaves the machine healthy): ``no-device``, a vendor runtime that
is installed and loads but sees no device, with the vendor's own check command.

No check creates a device context: ``import torch`` is tried in a child process first
(a broken vendor extension can make it fail through torch's backend autoload), device
counts come from the selection's probes and ``device_count()``, and
``torch.accelerator`` is asked only through calls that do not initialise a device.

Example::

    >>> from accelhal.cli.diagnosis import diagnose
    >>> diagnose().healthy      # on a machine where all is well
    True
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from accelhal.cli.models import DoctorOutput, Problem, Severity
from accelhal.errors import ConfigurationError, sentence
from accelhal.report import DetectionReport
from accelhal.settings import Settings, parse_backend_name
from accelhal.spec import Status

HIDE_ALL_VALUES = frozenset({"", "-1", "none", "nodevfiles"})
"""Visible-devices values that hide every device."""

OVERRIDE_RULES = frozenset({"ACCELHAL_ACCELERATOR", "DS_ACCELERATOR", "set_accelerator"})
"""Selection rules by which a user chose the backend on purpose."""

_AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"


@dataclass
class Context:
    """What the checks share: the environment, the parsed settings and the selection's report."""

    environ: dict[str, str]
    settings: Settings | None = None
    report: DetectionReport | None = None
    torch_imports: bool = True
    problems: list[Problem] = field(default_factory=list)


def _check_settings(ctx: Context) -> None:
    try:
        ctx.settings = Settings.from_environ(ctx.environ)
    except ConfigurationError as exc:
        variable = exc.variable or "an accelhal variable"
        ctx.problems.append(
            Problem(
                code="bad-variable",
                title=f"{variable} has an invalid value",
                detail=str(exc),
                fix=f"unset {variable} or give it a valid value (see the message)",
            )
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
    """Run ``code`` in a child interpreter with ``env``; (success, last line of stderr)."""
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    lines = result.stderr.strip().splitlines()
    return result.returncode == 0, lines[-1] if lines else f"exit status {result.returncode}"


def _torch_backend_culprits(env: dict[str, str]) -> list[str]:
    """Each ``torch.backends`` entry point, with its error when loading it fails."""
    quiet = {**env, _AUTOLOAD: "0"}
    found = []
    for ep in metadata.entry_points(group="torch.backends"):
        dist = getattr(ep, "dist", None)
        where = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown distribution"
        code = (
            "import importlib.metadata as m, torch\n"
            f"ep = next(e for e in m.entry_points(group='torch.backends') if e.name == {ep.name!r})\n"
            "ep.load()()"
        )
        ok, error = _imports_torch(quiet, code)
        found.append(f"{ep.name} = {ep.value} from {where}: {'loads' if ok else error}")
    return found


def _check_torch_import(ctx: Context) -> None:
    ok, error = _imports_torch(ctx.environ)
    if ok:
        return
    ctx.torch_imports = False
    autoload_on = ctx.environ.get(_AUTOLOAD, "1") == "1"
    if autoload_on and _imports_torch({**ctx.environ, _AUTOLOAD: "0"})[0]:
        culprits = _torch_backend_culprits(ctx.environ)
        ctx.problems.append(
            Problem(
                code="torch-autoload",
                title="a vendor package breaks 'import torch' through torch's backend autoload",
                detail=sentence(
                    f"'import torch' fails ({error}) but works with {_AUTOLOAD}=0. torch.backends entry points: "
                    + "; ".join(culprits)
                ),
                fix=_torch_fixes()
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


def _torch_fixes() -> str:
    """The selection's own fixes for a torch that cannot load (this process imports torch once, safely)."""
    from accelhal.selection import detect

    torch = detect().torch
    return " ".join(torch.fixes) if torch is not None else ""


def _check_selection(ctx: Context) -> None:
    from accelhal.plugins import describe_exception
    from accelhal.selection import detect

    if not ctx.torch_imports:
        return  # selection needs torch; the torch problem above is the one to fix first
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
    if forced is not None:
        from accelhal.selection import registry

        variable = ctx.settings.accelerator_variable
        known = registry().names()
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
                fix="see the plugin problems above; 'accelhal list' shows every backend's verdict",
            )
        )


def _distribution_of(report: DetectionReport, plugin: str) -> str:
    record = next((p for p in report.plugins if p.name == plugin), None)
    return f"{record.distribution} {record.distribution_version}" if record else plugin


def _check_plugins(ctx: Context) -> None:
    report = ctx.report
    if report is None:
        return
    for failure in report.failures:
        ctx.problems.append(
            Problem(
                code="plugin-failed",
                title=f"plugin {failure.plugin!r} failed at {failure.stage}",
                detail=f"{_distribution_of(report, failure.plugin)}: {failure.detail}",
                fix=f"upgrade or reinstall {_distribution_of(report, failure.plugin)}, or skip it with "
                f"ACCELHAL_BLOCK_PLUGINS={failure.plugin}",
            )
        )
    for candidate in report.candidates:
        if candidate.status in (Status.PROBE_ERROR, Status.BROKEN):
            ctx.problems.append(
                Problem(
                    code="backend-broken",
                    title=f"backend {candidate.name!r} is {candidate.status.value}",
                    detail=sentence(f"{candidate.source}: {candidate.reason}"),
                    fix=sentence(
                        candidate.hint
                        or f"repair the installation of {candidate.source}, or skip it with "
                        f"ACCELHAL_BLOCK_PLUGINS={candidate.plugin}",
                        capital=True,
                    ),
                )
            )


def _check_installed_without_device(ctx: Context) -> None:
    """A notice for each vendor runtime that is installed and loads but sees no device."""
    from accelhal.selection import registry

    if ctx.report is None or ctx.settings is None:
        return  # no selection, or a bad variable (reported above) that discovery would raise on
    for registration in registry().ordered():
        spec = registration.spec
        candidate = ctx.report.candidate(spec.name)
        vendor = [module for module in spec.requires if module != "torch"]
        if candidate is None or candidate.status is not Status.NO_DEVICE or not vendor:
            continue  # torch's own device modules (torch.cuda, torch.xpu) are in every torch: no notice
        command = spec.device_check_command
        look = f"run {command}" if command else "check that the device and its driver are installed"
        ctx.problems.append(
            Problem(
                code="no-device",
                severity=Severity.NOTICE,
                title=f"{', '.join(vendor)} is installed and loads, but sees no {spec.name} device",
                detail=f"{candidate.source}: {sentence(candidate.reason)}",
                fix=f"If this machine should have {spec.name} devices, {look} to see what the driver finds; "
                f"otherwise nothing needs fixing (accelhal uses {ctx.report.chosen or 'another backend'}).",
            )
        )


def _active_device_count(name: str) -> int | None:
    """The device count of the active backend ``name`` (no device context), else ``None``."""
    from accelhal.selection import get_accelerator

    acc = get_accelerator()
    return int(acc.device_count()) if acc.name == name else None


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
    """The device type ``torch.accelerator`` would use (``"cpu"`` when none), without a device context."""
    import torch

    current = getattr(getattr(torch, "accelerator", None), "current_accelerator", None)
    if current is None:
        raise LookupError("this torch has no torch.accelerator")
    device = current(check_available=True)
    return "cpu" if device is None else str(device.type)


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


CHECKS: tuple[tuple[str, Callable[[Context], None]], ...] = (
    ("settings", _check_settings),
    ("override-conflict", _check_override_conflict),
    ("torch-import", _check_torch_import),
    ("selection", _check_selection),
    ("plugins", _check_plugins),
    ("no-device", _check_installed_without_device),
    ("visible-devices", _check_visible_devices),
    ("torch-accelerator", _check_torch_accelerator),
)
"""Every check, in the order it runs (later checks use what earlier ones found)."""


def diagnose() -> DoctorOutput:
    """Run every check against this process's environment and selection."""
    ctx = Context(environ=dict(os.environ))
    for _, check in CHECKS:
        check(ctx)
    chosen = ctx.report.chosen if ctx.report else None
    errors = [p for p in ctx.problems if p.severity is Severity.ERROR]
    return DoctorOutput(healthy=not errors, active=chosen, problems=ctx.problems, checks=[n for n, _ in CHECKS])
