"""``accelhal info``: the active backend, how it was chosen, its devices and features.

The ``why`` is one sentence and then one line per probed backend; ``plugin problems``
lists every plugin failure of the selection (a plugin that cannot be imported, a backend
name taken without ``replaces=``, ...), which ``accelhal doctor`` says how to fix.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from accelhal.cli import render
from accelhal.cli.models import InfoOutput
from accelhal.cli.wording import decision_sentence, failure_line, probe_rows
from accelhal.report import DetectionReport
from accelhal.text import sentence

NAME = "info"
HELP = "the active backend, how it was chosen, its devices and features"
DESCRIPTION = (
    "Select the backend as a program would, then describe it: devices with memory and capability, "
    "dtypes, communication backend, stream/event/graph support, the torch.compile backend and versions."
)


SELECTION_FAILED = 2
"""Exit status when no backend could be selected (a bad variable, a forced backend that is unusable, ...)."""


def collect() -> InfoOutput:
    """Run selection and describe the active accelerator; when selection fails, ``error`` says why."""
    from accelhal.selection import detect, get_accelerator

    report = detect()
    if report.chosen is None:
        return InfoOutput(detection=report, accelerator=None, error=report.explanation, plugin_problems=report.failures)
    return InfoOutput(detection=report, accelerator=get_accelerator().info(), plugin_problems=report.failures)


def print_why(out: Console, report: DetectionReport) -> None:
    """The decision in a sentence, then what every other probed backend said (one line each)."""
    rows, not_probed = probe_rows(report)
    why = sentence(decision_sentence(report), capital=True)
    if rows:
        why += " The probes said:" if report.rule == "fallback" else " The other probes said:"
    elif not_probed:
        why += f" The other {len(not_probed)} backend(s) were not probed."
    render.field(out, "why", why)
    render.columns(out, rows, styled_column=1)
    if rows and not_probed:
        render.items(out, [f"not probed: {', '.join(not_probed)}"])


def print_plugin_problems(out: Console, report: DetectionReport) -> None:
    """``plugin problems: none``, or their count and one item each."""
    if not report.failures:
        render.field(out, "plugin problems", "none")
        return
    render.field(out, "plugin problems", f"{len(report.failures)} ('accelhal doctor' says how to fix each)")
    render.items(out, [failure_line(failure, report) for failure in report.failures])


def run(args: argparse.Namespace) -> int:
    """Print the active backend's description; exit status 2 when selection fails."""
    output = collect()
    if args.json:
        render.print_json(output)
        if output.accelerator is None:
            render.error(output.error or output.detection.rule)
        return 0 if output.accelerator is not None else SELECTION_FAILED
    report, acc = output.detection, output.accelerator
    if acc is None:
        render.error(output.error or report.rule)
        return SELECTION_FAILED
    out = render.console()
    chosen = report.candidate(acc.name)
    source = f", {chosen.source}" if chosen is not None else ""
    render.field(out, "active backend", f"{acc.name} (torch device type {acc.device_type!r}{source})")
    render.field(out, "chosen by", report.rule)
    print_why(out, report)
    devices = render.table(out, "device", "description", "memory total", "free", "capability")
    for device in acc.devices:
        devices.add_row(
            device.name,
            device.description,
            render.gib(device.total_memory),
            render.gib(device.available_memory),
            device.capability or "-",
        )
    if acc.devices:
        out.print(devices)
    else:
        render.field(out, "devices", "none visible")
    render.field(out, "dtypes", ", ".join(acc.dtypes))
    no_comm = f"none (torch.distributed has no backend registered for device type {acc.device_type!r})"
    render.field(out, "communication backend", acc.comm_backend or no_comm)
    features = f"streams {render.yes_no(acc.streams)}, events {render.yes_no(acc.events)}, "
    render.field(out, "features", features + f"graphs {render.yes_no(acc.graphs)}")
    render.field(out, "capabilities", ", ".join(acc.capabilities) or "none")
    render.field(out, "compile backend", f"{acc.compile_backend} ({acc.compile_backend_reason})")
    if acc.visible_devices_envs:
        render.field(out, "visible-devices variables", ", ".join(acc.visible_devices_envs))
    versions = [f"accelhal {acc.accelhal_version}", f"torch {acc.torch_version}", f"python {acc.python_version}"]
    versions += [f"{name} {version}" for name, version in sorted(acc.vendor_versions.items())]
    render.field(out, "versions", ", ".join(versions))
    print_plugin_problems(out, report)
    return 0
