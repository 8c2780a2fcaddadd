"""``accelhal info``: the active backend, how it was chosen, its devices and features.

The ``why`` is one sentence and then one line per probed backend; ``plugin problems``
lists every plugin failure of the selection (a plugin that cannot be imported, a backend
name taken without ``replaces=``, ...), which ``accelhal doctor`` says how to fix;
``plugins held back`` (only when there are any) names each plugin a variable kept from
loading (``ACCELHAL_BLOCK_PLUGINS``, ``ACCELHAL_PLUGINS``, ``ACCELHAL_DISABLE_PLUGIN_AUTOLOAD``,
or a forced backend it does not concern) and the variable.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from accelhal.cli.output import render
from accelhal.cli.output.models import InfoOutput, SglangPlatformReport, VllmPlatformReport
from accelhal.cli.output.wording import decision_sentence, failure_line, plugin_problems, probe_rows
from accelhal.report import AcceleratorInfo, DetectionReport
from accelhal.text import sentence

NAME = "info"
HELP = "the active backend, how it was chosen, its devices and features"
DESCRIPTION = (
    "Select the backend as a program would, then describe it: devices with memory and capability, "
    "dtypes, communication backend, stream/event/graph support, the torch.compile backend and versions."
)


SELECTION_FAILED = 2
"""Exit status when no backend could be selected (a bad variable, a forced backend that is unusable, ...)."""
DESCRIBE_FAILED = 1
"""Exit status when the active backend's runtime raised or answered wrongly while it was described
(:mod:`accelhal.cli.diagnosis.answers`: the verdict ``doctor`` and ``check`` give too)."""

HELD_BACK = frozenset({"blocked", "not-allowed", "autoload-disabled", "deferred"})
"""Plugin states in which a variable kept the plugin from loading (its detail names the variable)."""


def collect() -> InfoOutput:
    """Run selection and describe the active accelerator; when that fails, ``error`` says why."""
    from accelhal.cli.diagnosis.answers import cannot_describe, runtime_faults
    from accelhal.cli.supervision.faults import bounded, describe
    from accelhal.selection import detect, get_accelerator

    report = detect()
    held_back = [p for p in report.plugins if p.state in HELD_BACK]

    def output(accelerator: AcceleratorInfo | None, error: str | None = None) -> InfoOutput:
        return InfoOutput(
            detection=report,
            accelerator=accelerator,
            error=error,
            plugin_problems=plugin_problems(report),
            held_back=held_back,
        )

    if report.chosen is None:
        return output(None, report.explanation)
    acc = get_accelerator()
    answers = runtime_faults(acc)
    if answers.faults:  # the verdict doctor and the conformance suite give too
        return output(None, cannot_describe(acc.name, answers.faults))
    try:
        with bounded(acc.name, "info()"):
            described = acc.info()
    except Exception as exc:  # a device's runtime can raise in any call: say which, go no further
        return output(None, f"the active backend {acc.name!r} raised while it was described: {describe(exc)}")
    engines = {"vllm": vllm_platform(acc.name), "sglang": sglang_platform(acc.name)}
    return output(described).model_copy(update=engines)


def vllm_platform(backend: str) -> VllmPlatformReport | None:
    """What vLLM would run on here (``None`` without vLLM); its probes are bounded as the backend's calls are."""
    from accelhal.cli.supervision.faults import bounded
    from accelhal.compat.vllm._report import platform_choice

    with bounded(backend, "vLLM's platform resolution"):
        choice = platform_choice()
    return None if choice is None else VllmPlatformReport(platform=choice.platform, bridge=choice.bridge)


def sglang_platform(backend: str) -> SglangPlatformReport | None:
    """What SGLang would run on here (``None`` without SGLang); bounded as the backend's calls are."""
    from accelhal.cli.supervision.faults import bounded
    from accelhal.compat.sglang._report import platform_choice

    with bounded(backend, "SGLang's platform resolution"):
        choice = platform_choice()
    return None if choice is None else SglangPlatformReport(platform=choice.platform, bridge=choice.bridge)


def print_why(out: Console, report: DetectionReport) -> None:
    """The decision in a sentence, then what every other probed backend said (one line each)."""
    rows, not_probed = probe_rows(report)
    why = sentence(decision_sentence(report), capital=True)
    if rows:
        why += " The probes said:" if report.rule == "fallback" else " The other probes said:"
    elif not_probed:
        why += f" {_not_probed_sentence(len(not_probed), report)}"
    render.field(out, "why", why)
    render.columns(out, rows, styled_column=1)
    if rows and not_probed:
        render.items(out, [f"not probed: {', '.join(not_probed)}"])


def _not_probed_sentence(count: int, report: DetectionReport) -> str:
    """``The other 10 registered backends were not probed``, and how many plugins were not imported at all.

    A plugin deferred under a forced backend registered nothing in this process: its backends are not counted.
    """
    said = f"The other {count} registered backend{'s were' if count != 1 else ' was'} not probed"
    deferred = sum(p.state == "deferred" for p in report.plugins)
    if deferred:
        said += (
            f", and {deferred} plugin{'s were' if deferred != 1 else ' was'} not imported (plugins held back, below)"
        )
    return said + "."


def print_plugin_problems(out: Console, output: InfoOutput) -> None:
    """``plugin problems: none``, or their count and one item each."""
    problems = output.plugin_problems
    if not problems:
        render.field(out, "plugin problems", "none")
        return
    render.field(out, "plugin problems", f"{len(problems)} ('accelhal doctor' says how to fix each)")
    render.items(out, [failure_line(problem, output.detection) for problem in problems])


def print_held_back(out: Console, output: InfoOutput) -> None:
    """``plugins held back: N``, then each reason (it names the variable) with its plugins; nothing when none."""
    by_reason: dict[str, list[str]] = {}
    for plugin in output.held_back:
        by_reason.setdefault(plugin.detail, []).append(plugin.name)
    if by_reason:
        render.field(out, "plugins held back", str(len(output.held_back)))
        render.items(out, [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()])


def run(args: argparse.Namespace) -> int:
    """Print the active backend's description; exit status 2 when selection fails, 1 when describing it raised."""
    output = collect()
    report, acc = output.detection, output.accelerator
    status = 0 if acc is not None else SELECTION_FAILED if report.chosen is None else DESCRIBE_FAILED
    if args.json:
        render.print_json(output)
        if acc is None:
            render.error(output.error or report.rule)
        return status
    if acc is None:
        render.error(output.error or report.rule)
        return status
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
            "unknown" if device.total_memory is None else render.gib(device.total_memory),
            "unknown" if device.available_memory is None else render.gib(device.available_memory),
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
    if output.vllm is not None:
        render.field(out, "vllm platform", f"{output.vllm.platform} (accelhal's bridge {output.vllm.bridge})")
    if output.sglang is not None:
        render.field(out, "sglang platform", f"{output.sglang.platform} (accelhal's bridge {output.sglang.bridge})")
    print_plugin_problems(out, output)
    print_held_back(out, output)
    return 0
