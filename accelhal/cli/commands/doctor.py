"""``accelhal doctor``: find problems and say how to fix each; exit status 1 if any."""

from __future__ import annotations

import argparse
import os

from accelhal.cli.output import render
from accelhal.cli.output.models import Severity
from accelhal.cli.supervision import deadline

NAME = "doctor"
HELP = "find problems and say how to fix each"
DESCRIPTION = (
    "Check the accelhal variables, 'import torch' (torch's backend autoload), the selection, the "
    "plugins, vendor runtimes that see no device, the visible-devices variables and agreement with "
    "torch.accelerator. Discovery runs in a child process first, so that a plugin that ends or hangs the "
    "process is named. Exit status 0 when healthy (warnings and notices alone leave it healthy), 1 when a "
    "problem was found."
)


def run(args: argparse.Namespace) -> int:
    """Print the problems found and their fixes."""
    from accelhal.cli.diagnosis.checks import diagnose

    limit = "ACCELHAL_DOCTOR_TIMEOUT"
    before = os.environ.get(limit)
    given = getattr(args, "timeout", None)
    if given is None and before is None:  # the command's timeout bounds the discovery child's steps too
        given = _valid_seconds(deadline.TIMEOUT_VARIABLE)
    if given is not None:
        os.environ[limit] = f"{given:g}"
    try:
        output = diagnose()
    finally:
        if before is None:
            os.environ.pop(limit, None)
        else:
            os.environ[limit] = before
    if args.json:
        render.print_json(output)
        return 0 if output.healthy else 1
    out = render.console()
    render.field(out, "active backend", output.active or "none")
    render.field(out, "checks", ", ".join(output.checks))
    for number, problem in enumerate(output.problems, start=1):
        out.print()
        kind = problem.severity.value
        label = f"{number}. {'' if kind == 'error' else kind + ': '}{problem.title}"
        out.print(render.assemble((label, "bold red" if kind == "error" else "bold yellow"), f" [{problem.code}]"))
        out.print(render.text(problem.detail, "dim"))
        out.print(render.assemble(("fix: " if kind == "error" else "what to do: ", "bold green"), problem.fix))
    if output.problems:
        out.print()
    counts = {severity: sum(p.severity is severity for p in output.problems) for severity in Severity}
    others = ", ".join(
        _count(counts[severity], severity.value) for severity in (Severity.WARNING, Severity.NOTICE) if counts[severity]
    )
    if output.healthy:
        out.print(render.text(f"No problems found{f' ({others})' if others else ''}.", "green"))
        return 0
    found = _count(counts[Severity.ERROR], "problem") + " found" + (f" ({others})" if others else "")
    out.print(render.text(f"{found}.", "bold red"))
    return 1


def _valid_seconds(variable: str) -> float | None:
    """The variable's seconds where it is set and valid (a bad value is one of the findings)."""
    from accelhal.errors import ConfigurationError
    from accelhal.process.settings import parse_seconds

    try:
        return parse_seconds(variable, os.environ.get(variable), 0.0) or None
    except ConfigurationError:
        return None


def _count(number: int, noun: str) -> str:
    """``1 warning``, ``2 warnings``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
