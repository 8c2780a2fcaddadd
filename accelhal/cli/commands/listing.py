"""``accelhal list``: every registered backend in priority order, and every plugin.

The verdicts are the selection's own (:func:`accelhal.detect`): when an override chose
the backend, the others were not probed and say so.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from accelhal.cli.output import render
from accelhal.cli.output.models import BackendEntry, ListOutput
from accelhal.cli.output.wording import failure_phrase, reason_text
from accelhal.contract.spec import Status
from accelhal.discovery.plugins import Registry
from accelhal.discovery.records import CandidateRecord
from accelhal.report import DetectionReport
from accelhal.text import sentence

NAME = "list"
HELP = "every registered backend in priority order, with its verdict"
DESCRIPTION = (
    "Every registered backend, highest priority first: where it comes from, what its probe said and "
    "why; then every plugin of the 'accelhal' entry-point group and any failures."
)


def backend_entries(report: DetectionReport, registry: Registry) -> list[BackendEntry]:
    """One entry per registered backend, in probing order, with the selection's verdict."""
    entries = []
    for rank, registration in enumerate(registry.ordered(), start=1):
        spec = registration.spec
        active, description = spec.name == report.chosen, spec.description
        candidate = report.candidate(spec.name)
        if candidate is not None:
            entries.append(BackendEntry(**candidate.model_dump(), rank=rank, active=active, description=description))
            continue
        reason = f"not probed: {report.explanation}" if report.chosen else "not probed: selection stopped first"
        record = CandidateRecord.of(registration, Status.NOT_PROBED, reason)
        entries.append(BackendEntry(**vars(record), rank=rank, active=active, description=description))
    return entries


def collect(report: DetectionReport, backends: list[BackendEntry]) -> ListOutput:
    """What selection saw: ``report`` and the ``backends`` it ranked."""
    return ListOutput(
        chosen=report.chosen,
        rule=report.rule,
        error=report.error,
        backends=backends,
        plugins=report.plugins,
        failures=report.failures,
        torch=report.torch,
    )


HINTED = frozenset({Status.BROKEN, Status.PROBE_ERROR, Status.INVALID, Status.REPLACED})
"""Verdicts whose hint is printed under the table: something is wrong, not merely absent."""
HINTED_THIRD_PARTY = frozenset({Status.NOT_INSTALLED, Status.NO_DEVICE})
"""Verdicts whose hint is printed too for a third-party backend: a plugin installed for a device it cannot use."""


def _hinted(entry: BackendEntry) -> bool:
    return entry.status in HINTED or (entry.source != "built-in" and entry.status in HINTED_THIRD_PARTY)


def _backends(out: Console, output: ListOutput, torch_reason: str | None) -> None:
    """The backends table (one line per backend where the reason fits), then the hints that matter."""
    table = render.table(out, "backend", "verdict", "description / reason", title="Backends")
    hints = []
    for entry in output.backends:
        name = [render.text(entry.name + (" *" if entry.active else "")), render.text(f"prio {entry.priority}", "dim")]
        if entry.source != "built-in":
            name.append(render.text(entry.source, "dim"))
        if torch_reason is not None and entry.reason == torch_reason:
            reason = "torch cannot load (see above)"
        else:
            reason = reason_text(entry.status, entry.reason)  # a table cell: no full stop
        described = render.lines(render.text(entry.description, "dim"), reason) if entry.description else reason
        table.add_row(render.lines(*name), render.styled(entry.status.value), described)
        if entry.hint and _hinted(entry) and entry.reason != torch_reason:
            hints.append(f"{entry.name}: {sentence(entry.hint, capital=True)}")
    out.print(table)
    if output.chosen:
        out.print(render.text(f"* active: {output.chosen} (chosen by {output.rule})"))
    else:
        error = output.error or output.rule
        if torch_reason is not None and torch_reason in error:  # the reason and its fixes are printed above
            error = error.partition(" Hint: ")[0].replace(torch_reason, "torch cannot load, see above")
        render.field(out, "selection failed", error)
    if hints:
        out.print(render.text("hints:", "bold"))
        render.items(out, hints)


def _plugins(out: Console, output: ListOutput) -> None:
    """Third-party plugins and any plugin with a problem in a table; the built-ins that loaded in one line."""
    failures: dict[str, list[str]] = {}
    for failure in output.failures:
        failures.setdefault(failure.plugin, []).append(f"{failure_phrase(failure)}: {failure.detail}")
    shown = [p for p in output.plugins if not p.builtin or p.state != "loaded" or p.name in failures]
    quiet = [p for p in output.plugins if p not in shown]
    if shown:
        table = render.table(out, "plugin / distribution", "state", "detail", title="Plugins")
        for plugin in shown:
            detail = "; ".join(failures.pop(plugin.name, [])) or plugin.detail or "-"
            dist = f"{plugin.distribution} {plugin.distribution_version}"
            table.add_row(render.lines(plugin.name, render.text(dist, "dim")), render.styled(plugin.state), detail)
        for orphan, lines in failures.items():  # a failure whose plugin has no entry point record
            table.add_row(orphan, render.styled("failed"), "; ".join(lines))
        out.print(table)
    third_party = any(not p.builtin for p in output.plugins)
    if quiet:
        versions = ", ".join(sorted({f"{p.distribution} {p.distribution_version}" for p in quiet}))
        line = f"{len(quiet)} {'other ' if shown else ''}built-in ({versions}), loaded"
        render.field(out, "plugins", line + ("" if third_party else "; no third-party plugin installed"))
    out.print("'accelhal explain NAME' says why NAME is not the active backend.")


def run(args: argparse.Namespace) -> int:
    """Print the backends, the plugins and the failures; exit status 1 when selection failed, 2 for a bad variable.

    A bad variable stops selection before any plugin is discovered: ``--json`` lists no backend, with the error.
    """
    from accelhal.errors import ConfigurationError
    from accelhal.selection import detect, registry

    report = detect()  # runs selection if not yet done
    try:
        registered = registry()
    except ConfigurationError as exc:  # the error selection stopped at
        return render.refuse(str(exc), collect(report, []) if args.json else None)
    output = collect(report, backend_entries(report, registered))
    status = 0 if output.error is None else 1
    if args.json:
        render.print_json(output)
        return status
    out = render.console()
    torch_reason = render.torch_failure(out, output.torch)
    _backends(out, output, torch_reason)
    _plugins(out, output)
    return status
