"""How the command puts verdicts and plugin failures into words, the same in every subcommand.

A status is a value (``probe-error``), never an adjective in a sentence: sentences use
:data:`STATUS_PHRASES` (``"'acme' raised an error in its probe"``), and a plugin failure
reads as what happened (:func:`failure_title`), never as ``failed at conflict``.

Example::

    >>> from accelhal.contract.spec import Status
    >>> verdict_sentence("cuda", Status.NO_DEVICE, "torch.cuda.device_count() is 0")
    "'cuda' is installed but sees no device: torch.cuda.device_count() is 0."
"""

from __future__ import annotations

from accelhal.contract.spec import CONTRACT_VERSION, Status
from accelhal.errors import plugin_failure
from accelhal.report import CandidateReport, DetectionReport, FailureReport
from accelhal.text import MISSING_MEMBERS, sentence

STATUS_PHRASES: dict[Status, str] = {
    Status.AVAILABLE: "is available",
    Status.NOT_INSTALLED: "is not installed",
    Status.NO_DEVICE: "is installed but sees no device",
    Status.BROKEN: "is installed but broken",
    Status.REPLACED: "is answered by another runtime",
    Status.PROBE_ERROR: "raised an error in its probe",
    Status.INVALID: "is not usable: its registration is invalid",
    Status.NOT_PROBED: "was not probed",
}
"""Each status as a predicate: ``f"{name!r} {STATUS_PHRASES[status]}"``."""


def reason_text(status: Status, reason: str) -> str:
    """``reason`` without a leading ``not probed:`` that would only repeat the status."""
    reason = reason.strip()
    return reason.removeprefix("not probed:").strip() if status is Status.NOT_PROBED else reason


def verdict_sentence(name: str, status: Status, reason: str) -> str:
    """``'NAME' <status phrase>: <reason>.``"""
    phrase, detail = f"{name!r} {STATUS_PHRASES[status]}", reason_text(status, reason)
    return sentence(f"{phrase}: {detail}" if detail else phrase)


def failure_phrase(failure: FailureReport) -> str:
    """What happened to the plugin, as a predicate: ``cannot be imported`` (:data:`~accelhal.errors.PLUGIN_STAGES`)."""
    return plugin_failure(failure.plugin, failure.stage).removeprefix(f"plugin {failure.plugin!r} ")


def failure_title(failure: FailureReport) -> str:
    """What happened to the plugin, as a heading: ``plugin 'acme' cannot be imported``."""
    return plugin_failure(failure.plugin, failure.stage)


def distribution_of(report: DetectionReport, plugin: str) -> str:
    """``"<distribution> <version>"`` of entry point ``plugin``, or its name when it is not in the report."""
    record = next((p for p in report.plugins if p.name == plugin), None)
    return f"{record.distribution} {record.distribution_version}" if record else plugin


def failure_fix(failure: FailureReport, report: DetectionReport) -> str:
    """What to do: the failure's own hint where it has one, else repair or block the plugin."""
    block = f"ACCELHAL_BLOCK_PLUGINS={failure.plugin}"
    if failure.hint:
        also = "" if "ACCELHAL_BLOCK_PLUGINS" in failure.hint else f" Until then, {block} skips the plugin."
        return sentence(failure.hint, capital=True) + also
    distribution = distribution_of(report, failure.plugin)
    if failure.stage != "validate":
        return f"Skip it with {block}, or upgrade or reinstall {distribution}."
    if MISSING_MEMBERS in failure.detail:
        change = (
            f"implement the missing members of accelhal's contract (version {CONTRACT_VERSION}: "
            "docs/reference/contract.md gives each member's signature and meaning)"
        )
    else:
        change = "correct the class as the detail says (docs/plugins.md, section 1)"
    return (
        f"Reinstalling {distribution} does not change its class: its authors must {change}; "
        f"'accelhal check {failure.backend or 'NAME'}' then runs the conformance suite. Until then, {block} skips "
        "the plugin."
    )


def failure_line(failure: FailureReport, report: DetectionReport) -> str:
    """One line for a listing: ``plugin 'acme' cannot be imported (acme-accel 1.0): <detail>.``"""
    return sentence(f"{failure_title(failure)} ({distribution_of(report, failure.plugin)}): {failure.detail}")


def plugin_problems(report: DetectionReport) -> list[FailureReport]:
    """Every plugin problem of the selection: its failures, then each backend whose probe raised or is broken.

    A backend of :data:`~accelhal.selection.cascade.FAILING` is a failure of stage ``probe``, as strict mode
    raises it; ``accelhal doctor`` reports the same backends as ``backend-broken``. A torch that
    cannot load, which makes every backend ``broken``, is no plugin's problem (``torch`` says why).
    """
    from accelhal.selection.cascade import FAILING

    torch_reason = report.torch.reason if report.torch is not None else None
    failing = [
        FailureReport(plugin=c.plugin, stage="probe", detail=f"{c.name}: {c.reason}", backend=c.name, hint=c.hint)
        for c in report.candidates
        if c.status in FAILING and c.reason != torch_reason
    ]
    return [*report.failures, *failing]


def short_reason(candidate: CandidateReport, report: DetectionReport) -> str:
    """The candidate's reason, or ``torch cannot load`` where it is the torch verdict the report carries."""
    torch = report.torch
    if torch is not None and torch.reason is not None and candidate.reason == torch.reason:
        return "torch cannot load"
    return candidate.reason


def decision_sentence(report: DetectionReport) -> str:
    """Why the active backend was chosen, in one sentence; the evidence is :func:`probe_rows`."""
    chosen = report.candidate(report.chosen) if report.chosen else None
    if report.rule == "fallback":
        return "no accelerator qualified, so the cpu fallback was chosen."
    if report.rule == "priority" and chosen is not None:
        return f"{chosen.name!r} is the available backend with the highest priority ({chosen.priority})."
    return sentence(report.explanation)


def probe_rows(report: DetectionReport) -> tuple[list[tuple[str, str, str]], list[str]]:
    """``(name, status, reason)`` of each probed backend but the active one, and the names not probed."""
    rows, not_probed = [], []
    for candidate in report.candidates:
        if candidate.name == report.chosen:
            continue
        if candidate.status is Status.NOT_PROBED:
            not_probed.append(candidate.name)
        else:
            rows.append((candidate.name, candidate.status.value, short_reason(candidate, report)))
    return rows, not_probed
