"""``accelhal list``: every registered backend in priority order, and every plugin.

The verdicts are the selection's own (:func:`accelhal.detect`): when an override chose
the backend, the others were not probed and say so.
"""

from __future__ import annotations

import argparse

from rich.text import Text

from accelhal.cli import render
from accelhal.cli.models import BackendEntry, ListOutput
from accelhal.plugins import Registry
from accelhal.report import DetectionReport
from accelhal.spec import Status

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
        entries.append(
            BackendEntry(
                name=spec.name,
                device_type=spec.device_type,
                priority=spec.priority,
                source=registration.plugin.source,
                plugin=registration.plugin.name,
                status=Status.NOT_PROBED,
                reason="not probed: selection stopped first"
                if report.chosen is None
                else f"not probed: {report.explanation}",
                probe_seconds=None,
                comm_backend=spec.comm_backend,
                visible_devices_envs=list(spec.visible_devices_envs),
                rank=rank,
                active=active,
                description=description,
            )
        )
    return entries


def collect() -> ListOutput:
    """Run selection (if not yet done) and list what it saw."""
    from accelhal.selection import detect, registry

    report = detect()
    return ListOutput(
        chosen=report.chosen,
        rule=report.rule,
        error=report.error,
        backends=backend_entries(report, registry()),
        plugins=report.plugins,
        failures=report.failures,
        torch=report.torch,
    )


def run(args: argparse.Namespace) -> int:
    """Print the backends, the plugins and the failures; exit status 1 when selection failed."""
    output = collect()
    status = 0 if output.error is None else 1
    if args.json:
        render.print_json(output)
        return status
    out = render.console()
    torch_reason = render.torch_failure(out, output.torch)
    backends = render.table(out, "#", "backend / source", "prio", "verdict", "reason", title="Backends")
    for entry in output.backends:
        name = Text.assemble(entry.name + (" *" if entry.active else ""), "\n", (entry.source, "dim"))
        if torch_reason is not None and entry.reason == torch_reason:
            reason = "torch cannot load (see above)"
        else:
            reason = render.with_hint(entry.reason, entry.hint)
        backends.add_row(str(entry.rank), name, str(entry.priority), render.styled(entry.status.value), reason)
    out.print(backends)
    if output.chosen:
        out.print(f"* active: {output.chosen} (chosen by {output.rule})")
    else:
        error = output.error or output.rule
        if torch_reason is not None and torch_reason in error:
            error = error[: error.index(torch_reason)] + "torch cannot load (see above)."
        render.field(out, "selection failed", error)
    plugins = render.table(out, "plugin", "distribution", "state", "detail", title="Plugins")
    for plugin in output.plugins:
        dist = f"{plugin.distribution} {plugin.distribution_version}"
        plugins.add_row(plugin.name, dist, render.styled(plugin.state), plugin.detail or "-")
    out.print(plugins)
    if output.failures:
        failures = render.table(out, "plugin", "stage", "backend", "error", title="Plugin failures")
        for failure in output.failures:
            failures.add_row(failure.plugin, failure.stage, failure.backend or "-", failure.detail)
        out.print(failures)
    return status
