"""The English of selection: its explanations, the fallback's warning and the error when nothing is available."""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelhal.contract.spec import Status
from accelhal.discovery import plugins
from accelhal.discovery.records import CandidateRecord, Decision
from accelhal.text import sentence, shorten

if TYPE_CHECKING:
    from accelhal.errors import BackendUnavailableError


def fallback_warning(plugin_problems: int) -> str:
    """The warning of a cascade that fell back to cpu: one line of at most 120 characters.

    What each probe said is in the DEBUG record beside it, :func:`detect` and ``accelhal explain``.
    """
    problems = ""
    if plugin_problems:
        problems = f"; {plugin_problems} plugin problem{'s' if plugin_problems > 1 else ''}: 'accelhal doctor'"
    return f"accelhal: no accelerator qualified, so cpu is used ('accelhal explain' says why{problems})"


def failure_summary(reg: plugins.Registry) -> str:
    """The plugin failures of discovery, ``"; "`` between (``""`` when there are none)."""
    if not reg.failures:
        return ""
    from accelhal.errors import plugin_failure

    return "; ".join(f"{plugin_failure(f.plugin, f.stage)}: {shorten(f.detail, 160)}" for f in reg.failures)


def nothing_available(reg: plugins.Registry, records: list[CandidateRecord]) -> BackendUnavailableError:
    """The error when not even the fallback is available; a cause several backends share is said once.

    (A torch that cannot load makes every backend ``broken`` for the same reason.)
    """
    fallback = next((r for r in records if r.name == plugins.FALLBACK_BACKEND), None)
    others = [r for r in records if r is not fallback]
    message = "no backend is available, not even the cpu fallback"
    if fallback is not None:
        alike = [r.name for r in others if (r.status, r.reason) == (fallback.status, fallback.reason)]
        others = [r for r in others if r.name not in alike]
        message = sentence(f"{message}: {verdicts_summary([fallback])}")
        if alike:
            message += (
                f" {joined(alike)} {'is' if len(alike) == 1 else 'are'} {fallback.status.value} for the same reason."
            )
    if others or fallback is None:
        message = sentence(message) + f" Probed: {verdicts_summary(others) or 'none registered'}"
    held_back = reg.held_back()
    if held_back:
        message = sentence(message) + f" Held back: {held_back}"
    from accelhal.errors import BackendUnavailableError

    return BackendUnavailableError(
        plugins.FALLBACK_BACKEND, message, hint=fallback.hint if fallback is not None else None
    )


def joined(names: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def verdicts_summary(records: list[CandidateRecord]) -> str:
    """``name: status (reason)`` for each backend, ``"; "`` between.

    Backends with the same verdict share one entry (``a, b: broken (torch itself cannot load: ...)``),
    so that a shared cause is said once.
    """
    groups: dict[tuple[Status, str], list[str]] = {}
    for record in records:
        groups.setdefault((record.status, record.reason), []).append(record.name)
    return "; ".join(f"{', '.join(names)}: {status.value} ({reason})" for (status, reason), names in groups.items())


def other_verdicts(decision: Decision, chosen_record: CandidateRecord) -> str:
    """What the other candidates said, for the explanation and the fallback's warning."""
    return (
        verdicts_summary([r for r in decision.candidates if r is not chosen_record]) or "no other backend is registered"
    )


def explanation(decision: Decision, chosen_record: CandidateRecord) -> str:
    """The decision's explanation: why the chosen backend won, with what the others said."""
    if decision.rule == "fallback":
        probed = other_verdicts(decision, chosen_record)
        return f"no accelerator qualified, so the cpu fallback was chosen. Probed: {probed}"
    return (
        f"{decision.chosen!r} is the available backend with the highest priority "
        f"({chosen_record.priority}); others: {other_verdicts(decision, chosen_record)}"
    )
