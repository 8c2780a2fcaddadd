"""``accelhal explain [NAME]``: why the active backend won, or why ``NAME`` did not.

The answer is one :class:`~accelhal.cli.output.models.Outcome`, with the evidence and a hint;
``generic``, where no backend has that name, is resolved as selection resolves it
(:func:`accelhal.selection.generic.generic_backend`). An unknown or ambiguous name, or a
bad variable (:func:`unconfigured`), exits with 2; a failed selection with 1. See ``docs/reference/cli.md``.
"""

from __future__ import annotations

import argparse
import os

from accelhal.cli.output import render
from accelhal.cli.output.models import ExplainOutput, Outcome
from accelhal.cli.output.wording import (
    decision_sentence,
    failure_fix,
    failure_line,
    failure_title,
    probe_rows,
    reason_text,
    short_reason,
    verdict_sentence,
)
from accelhal.contract.spec import Status
from accelhal.discovery.plugins import Registry
from accelhal.report import CandidateReport, DetectionReport
from accelhal.text import quote, sentence

_STATUS_OUTCOMES: dict[Status, Outcome] = {
    Status.NOT_INSTALLED: Outcome.NOT_INSTALLED,
    Status.NO_DEVICE: Outcome.NO_DEVICE,
    Status.BROKEN: Outcome.BROKEN,
    Status.REPLACED: Outcome.REPLACED,
    Status.PROBE_ERROR: Outcome.PROBE_ERROR,
    Status.INVALID: Outcome.INVALID,
    Status.NOT_PROBED: Outcome.NOT_PROBED,
}


_GENERIC_OUTCOMES: dict[str, Outcome] = {
    "ambiguous": Outcome.AMBIGUOUS,
    "blocked": Outcome.BLOCKED,
    "plugin-failed": Outcome.PLUGIN_FAILED,
    "torch": Outcome.BROKEN,
    "old-torch": Outcome.BROKEN,
    "no-accelerator": Outcome.NO_DEVICE,
    "claimed": Outcome.REPLACED,
    "undiscovered": Outcome.NOT_PROBED,
}
"""Why ``generic`` stands for no backend (:attr:`accelhal.selection.generic.NoGenericBackend.cause`) -> the outcome."""

GENERIC_MEANING = (
    "'generic' stands for the backend the generic plugin registers for the device torch.accelerator reports"
)


def exit_status(output: ExplainOutput) -> int:
    """2 for an unknown or ambiguous ``NAME``; 1 when selection failed (whatever ``NAME`` is); else 0."""
    if output.outcome in (Outcome.UNKNOWN, Outcome.AMBIGUOUS):
        return 2
    return 1 if output.active is None else 0


NAME = "explain"
HELP = "why the active backend won, or why NAME did not"
DESCRIPTION = (
    "Without NAME: why the active backend was chosen. With NAME: why that backend is not the active "
    "one (not installed, no device, blocked, lower priority, probe error, ...)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``explain`` arguments."""
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="a backend name, e.g. cuda; generic: the device torch.accelerator reports",
    )


def _candidate_details(candidate: CandidateReport, report: DetectionReport, said: str = "") -> list[str]:
    """The verdict (its reason unless ``said`` gives it already) and where the backend comes from."""
    reason = reason_text(candidate.status, short_reason(candidate, report))
    verdict = candidate.status.value if reason in said else f"{candidate.status.value} ({reason})"
    return [
        f"verdict: {verdict}",
        f"priority {candidate.priority}, from {candidate.source} (plugin {candidate.plugin!r})",
    ]


def _explain_active(report: DetectionReport, known: list[str]) -> ExplainOutput:
    if report.chosen is None:
        fallback = report.candidate("cpu")
        torch_fixes = report.torch.fixes if report.torch is not None else []
        error, _, error_hint = (report.error or "").partition(" Hint: ")  # the hint is a field of its own
        return ExplainOutput(
            name=None,
            active=None,
            outcome=Outcome.SELECTION_FAILED,
            summary=f"no backend is active: {error}",
            details=[f"{c.name}: {c.status.value} ({short_reason(c, report)})" for c in report.candidates],
            hint=" ".join(torch_fixes) or error_hint or (fallback.hint if fallback is not None else None),
            known=known,
        )
    candidate = report.candidate(report.chosen)
    rows, not_probed = probe_rows(report)
    return ExplainOutput(
        name=report.chosen,
        active=report.chosen,
        outcome=Outcome.ACTIVE,
        summary=f"{report.chosen!r} is active, chosen by rule {report.rule!r}: {decision_sentence(report)}",
        details=[
            *(_candidate_details(candidate, report) if candidate else []),
            *(f"{name}: {status} ({reason})" for name, status, reason in rows),
            *([f"not probed: {', '.join(not_probed)}"] if not_probed else []),
        ],
        known=known,
    )


def _explain_unregistered(name: str, report: DetectionReport, known: list[str]) -> ExplainOutput:
    """``name`` is not a registered backend: its plugin was held back or failed, or nobody provides it."""
    plugin = next((p for p in report.plugins if name in (p.name, p.distribution.lower())), None)
    if plugin is not None and plugin.state != "loaded":
        outcome = Outcome.PLUGIN_FAILED if plugin.state == "failed" else Outcome.BLOCKED
        failure = next((f for f in report.failures if f.plugin == plugin.name), None)
        why = failure_title(failure) if failure else f"plugin {plugin.name!r} was not loaded ({plugin.state})"
        return ExplainOutput(
            name=name,
            active=report.chosen,
            outcome=outcome,
            summary=f"{why}, so no backend of its distribution is registered",
            details=[f"{plugin.distribution} {plugin.distribution_version}: {plugin.detail}"],
            hint=failure_fix(failure, report) if failure else None,
            known=known,
        )
    held_back = [f"{p.name} ({p.state}: {p.detail})" for p in report.plugins if p.state != "loaded"]
    details = [f"known backends: {', '.join(known)}", *(f"plugin not loaded: {h}" for h in held_back)]
    summary = f"no installed plugin registers a backend named {quote(name)}"
    unloaded = _autoload_skipped()
    if unloaded is None:
        hint = f"install the distribution that provides {quote(name)}, or ask for one of the known backends"
    else:  # the device may be a vendor's that torch's autoload was told not to load
        variable, value, points = unloaded
        summary += f"; torch's device autoload is off ({variable}={value}), so no torch.backends entry point was loaded"
        details.append(f"torch.backends entry points not loaded: {'; '.join(points)}")
        hint = (
            f"if {quote(name)} is the device of a vendor package named above, import the package before accelhal "
            f"selects a backend, as torch's autoload would (the entry point says what it runs), or unset {variable} "
            "so that 'import torch' loads it"
        )
    return ExplainOutput(
        name=name,
        active=report.chosen,
        outcome=Outcome.UNKNOWN,
        summary=summary,
        details=details,
        hint=hint,
        known=known,
    )


def _autoload_skipped() -> tuple[str, str, list[str]] | None:
    """Torch's device autoload is off and ``torch.backends`` entry points are installed: what to say of it.

    ``(variable, its value, ["name = value (distribution version)", ...])``, else ``None``.
    """
    from accelhal.discovery.entry_points import find
    from accelhal.process.torch_import import AUTOLOAD_VARIABLE, autoload_on

    points = [] if autoload_on(os.environ) else find("torch.backends")
    value = os.environ.get(AUTOLOAD_VARIABLE, "")
    if not points:
        return None
    described = []
    for ep in points:
        dist = getattr(ep, "dist", None)
        where = f" ({dist.metadata['Name']} {dist.version})" if dist is not None else ""
        described.append(f"{ep.name} = {ep.value}{where}")
    return AUTOLOAD_VARIABLE, value, described


def _why_not(candidate: CandidateReport, report: DetectionReport) -> tuple[Outcome, str]:
    if candidate.status is Status.AVAILABLE:
        winner = report.candidate(report.chosen) if report.chosen else None
        if winner is not None and report.rule in ("priority", "fallback"):
            return Outcome.LOWER_PRIORITY, (
                f"{candidate.name!r} is available, but {winner.name!r} has a higher priority "
                f"({winner.priority} > {candidate.priority})"
            )
        return Outcome.SELECTION_FAILED, f"{candidate.name!r} is available, but selection ended: {report.explanation}"
    return _STATUS_OUTCOMES[candidate.status], verdict_sentence(candidate.name, candidate.status, candidate.reason)


def explain(name: str | None, report: DetectionReport, registry: Registry) -> ExplainOutput:
    """Why ``name`` (or the active backend, when ``None``) is or is not the active backend.

    When selection failed, the details end with every plugin failure (strict mode stops at
    the first, but all are shown).
    """
    output = _explain(name, report, registry)
    output = output.model_copy(update={"torch": report.torch, "summary": sentence(output.summary)})
    if report.chosen is not None or not report.failures:
        return output
    said = " ".join(output.details)
    failures = [failure_line(f, report) for f in report.failures if f.detail not in said]  # not twice
    return output.model_copy(update={"details": [*output.details, *failures]})


def _explain(name: str | None, report: DetectionReport, registry: Registry) -> ExplainOutput:
    from accelhal.selection.forced import known_names

    known = known_names(registry)
    if name is None or name == report.chosen:
        return _explain_active(report, known)
    if name not in registry.backends:
        from accelhal.selection.generic import GENERIC_ALIAS

        if name == GENERIC_ALIAS:
            return _explain_generic(report, registry, known)
        return _explain_unregistered(name, report, known)
    candidate = report.candidate(name)
    if candidate is None:
        return ExplainOutput(
            name=name,
            active=report.chosen,
            outcome=Outcome.NOT_PROBED,
            summary=f"{name!r} was not probed: {report.explanation}",
            details=[],
            known=known,
        )
    outcome, summary = _why_not(candidate, report)
    own = [f for f in report.failures if f.backend == name]
    failures = [failure_line(f, report) for f in own if f.detail not in summary]
    return ExplainOutput(
        name=name,
        active=report.chosen,
        outcome=outcome,
        summary=summary,
        details=[*_candidate_details(candidate, report, summary), *failures],
        hint=candidate.hint or (failure_fix(own[0], report) if own else None),
        known=known,
    )


def _explain_generic(report: DetectionReport, registry: Registry, known: list[str]) -> ExplainOutput:
    """``generic``, no backend's name: the backend it stands for, as selection resolves it, or why there is none."""
    from accelhal.selection.generic import GENERIC_ALIAS, NoGenericBackend, generic_backend

    found = generic_backend(registry, "accelhal explain")
    if isinstance(found, NoGenericBackend):
        ambiguous = found.cause == "ambiguous"
        return ExplainOutput(
            name=GENERIC_ALIAS,
            active=report.chosen,
            outcome=_GENERIC_OUTCOMES[found.cause],
            summary=f"{quote(GENERIC_ALIAS)} is ambiguous: {found.reason}" if ambiguous else found.reason,
            details=[GENERIC_MEANING],
            hint=found.hint,
            known=known,
            alias=GENERIC_ALIAS,
        )
    name = found.spec.name
    output = _explain(name, report, registry)
    reached = f"{quote(GENERIC_ALIAS)} stands for {quote(name)}, the backend of torch's accelerator; "
    return output.model_copy(update={"alias": GENERIC_ALIAS, "summary": reached + output.summary})


def unconfigured(name: str | None, report: DetectionReport, error: str) -> ExplainOutput:
    """Selection stopped at a bad variable (``error``), before any plugin was discovered: no backend is known."""
    return ExplainOutput(
        name=name,
        active=None,
        outcome=Outcome.SELECTION_FAILED,
        summary=sentence(f"no backend is active: {error}"),
        details=["selection stopped before discovering any plugin, so no backend is known"],
        known=[],
        torch=report.torch,
    )


def run(args: argparse.Namespace) -> int:
    """Print the explanation; exit 2 for an unknown name or a bad variable, 1 when selection failed."""
    from accelhal.errors import ConfigurationError
    from accelhal.selection import detect, registry

    name = args.name.strip().lower() if args.name is not None else None
    report = detect()  # runs selection if not yet done
    try:
        known = registry()
    except ConfigurationError as exc:  # the error selection stopped at
        return render.refuse(str(exc), unconfigured(name, report, str(exc)) if args.json else None)
    if name is not None and name not in known.backends:
        known.load_deferred()  # a plugin not imported under a forced backend may provide it
    output = explain(name, report, known)
    if args.json:
        render.print_json(output)
    else:
        out = render.console()
        render.field(out, output.name or "selection", output.outcome.value)
        render.field(out, "why", output.summary)
        render.items(out, output.details)
        if output.hint:
            render.field(out, "hint", sentence(output.hint, capital=True))
        if output.active and output.active != output.name:
            render.field(out, "active backend", output.active)
    if output.outcome is Outcome.UNKNOWN and name is not None:
        from accelhal.errors import UnknownBackendError

        render.error(str(UnknownBackendError(name, output.known)))
    elif output.outcome is Outcome.AMBIGUOUS:
        render.error(output.summary)
    return exit_status(output)
