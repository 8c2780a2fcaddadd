"""``accelhal doctor``: find problems and say how to fix each; exit status 1 if any."""

from __future__ import annotations

import argparse

from rich.text import Text

from accelhal.cli import render

NAME = "doctor"
HELP = "find problems and say how to fix each"
DESCRIPTION = (
    "Check the accelhal variables, 'import torch' (torch's backend autoload), the selection, the "
    "plugins, the visible-devices variables and agreement with torch.accelerator. Discovery runs in a "
    "child process first, so that a plugin that ends or hangs the process is named. Exit status 0 when "
    "healthy (warnings allowed), 1 when a problem was found."
)


def run(args: argparse.Namespace) -> int:
    """Print the problems found and their fixes."""
    from accelhal.cli.diagnosis import diagnose

    output = diagnose()
    if args.json:
        render.print_json(output)
        return 0 if output.healthy else 1
    out = render.console()
    render.field(out, "active backend", output.active or "none")
    render.field(out, "checks", ", ".join(output.checks))
    errors = sum(1 for p in output.problems if p.severity == "error")
    warnings = len(output.problems) - errors
    if not output.problems:
        out.print(Text("No problems found.", style="green"))
        return 0
    for number, problem in enumerate(output.problems, start=1):
        out.print()
        label, style = ("warning: ", "bold yellow") if problem.severity == "warning" else ("", "bold red")
        out.print(Text.assemble((f"{number}. {label}{problem.title}", style), f" [{problem.code}]"))
        out.print(Text(problem.detail), style="dim")
        out.print(Text.assemble(("fix: ", "bold green"), problem.fix))
    out.print()
    summary = f"{errors} problem(s) found" if errors else "No problems found"
    summary += f", {warnings} warning(s)." if warnings else "."
    out.print(Text(summary, style="bold red" if errors else "bold yellow"))
    return 0 if output.healthy else 1
