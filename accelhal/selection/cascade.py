"""The priority cascade: probe the registered backends by descending priority and take the first available."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from accelhal import plain_record
from accelhal.contract.spec import Status
from accelhal.discovery import plugins
from accelhal.discovery.records import CandidateRecord, Decision, Registration
from accelhal.process.settings import Settings
from accelhal.selection.candidates import (
    as_plugin_error,
    capturing,
    check_lower_priority,
    construct,
    mark_invalid,
    probe_candidate,
    selection_registry,
    visible_devices_envs,
)
from accelhal.selection.messages import (
    explanation,
    failure_summary,
    fallback_warning,
    nothing_available,
    other_verdicts,
)

logger = logging.getLogger("accelhal")

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator


def decide_cascade(settings: Settings, probed: list[CandidateRecord]) -> tuple[Decision, Accelerator]:
    """Probe the registered backends by descending priority and take the first available one.

    The backends below it are left to a report (:func:`probe_the_rest`): their records say
    so until then. Under strict mode every backend is probed now, so that any failure raises.
    """
    reg = selection_registry(settings)
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
        record = probe_candidate(registration)
        records.append(record)
        probed.append(record)
        if record.status is not Status.AVAILABLE:
            if record.status in FAILING and settings.strict:
                raise plugins.plugin_error(record.plugin, "probe", f"{record.name}: {record.reason}")
            continue
        if chosen is not None:  # strict mode only: a lower-priority backend checked now
            check_lower_priority(reg, registration, record, chosen.name)
            continue
        try:
            chosen = capturing(record, functools.partial(construct, registration))
            chosen_record = record
        except Exception as caught:
            if (exc := as_plugin_error(caught)) is None:
                raise
            mark_invalid(reg, record, exc)  # raises under strict mode
    if chosen is None or chosen_record is None:
        raise nothing_available(reg, records)
    decision = Decision(
        chosen=chosen.name,
        rule="fallback" if chosen.name == plugins.FALLBACK_BACKEND else "priority",
        explanation="",
        candidates=records,
        plugins=list(reg.plugins),
        failures=list(reg.failures),
        visible_devices_envs=visible_devices_envs(reg),
        unprobed=unprobed,
    )
    decision.explanation = explanation(decision, chosen_record)
    if decision.rule == "fallback":
        failing = sum(record.status in FAILING for record in records)  # doctor's backend-broken findings
        logger.warning("%s", fallback_warning(len(reg.failures) + failing), extra={FALLBACK_RECORD: True})
        if logger.isEnabledFor(logging.DEBUG):
            problems = failure_summary(reg)
            logger.debug(
                "accelhal: the cpu fallback was chosen. Probed: %s.%s",
                other_verdicts(decision, chosen_record),
                f" Plugin problems: {problems} ('accelhal doctor' says how to fix them)." if problems else "",
            )
    else:
        logger.info("accelhal: selected %r by priority", chosen.name)
    return decision, chosen


FALLBACK_RECORD = "accelhal_fallback"
"""The attribute set on the log record of the fallback's warning (a filter may hold it back by it)."""

FAILING = frozenset({Status.PROBE_ERROR, Status.BROKEN})
"""The verdicts that are a plugin problem rather than an absence (the probe raised, or the runtime is broken).

The fallback's warning counts them with the plugin failures, ``accelhal info`` lists them among its plugin
problems and ``accelhal doctor`` reports each (``backend-broken``); under ``ACCELHAL_STRICT=1`` they are errors.
"""


def _not_probed_yet(registration: Registration, chosen: str) -> CandidateRecord:
    reason = f"not probed: {chosen!r} has a higher priority; a report (accelhal.detect()) probes it"
    return CandidateRecord.of(registration, Status.NOT_PROBED, reason)


def probe_the_rest(decision: Decision) -> None:
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
        record = probe_candidate(registration)
        if record.status is Status.AVAILABLE and reg is not None and decision.chosen is not None:
            check_lower_priority(reg, registration, record, decision.chosen)
        for name, value in plain_record.record_fields(record).items():
            setattr(placeholder, name, value)
    if reg is not None:
        decision.failures = list(reg.failures)
    decision.explanation = explanation(decision, chosen_record)
