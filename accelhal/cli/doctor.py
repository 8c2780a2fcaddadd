"""``accelhal doctor``: find problems and say how to fix each; exit status 1 if any."""

from __future__ import annotations

import argparse

from rich.text import Text

from accelhal.cli import render

NAME = "doctor"
HELP = "find problems and say how to fix each"
DESCRIPTION = (
    "Check the accelhal variables, 'import torch' (torch's backend autoload), the selection, the "
    "plugins, the visible-devices variables and agreement with torch.accelerator. Exit status 0 when "
    "healthy, 1 when a problem was found."
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
    if output.healthy:
        out.print(Text("No problems found.", style="green"))
        return 0
    for number, problem in enumerate(output.problems, start=1):
        out.print()
        out.print(Text.assemble((f"{number}. {problem.title}", "bold red"), f" [{problem.code}]"))
        out.print(Text(problem.detail), style="dim")
        out.print(Text.assemble(("fix: ", "bold green"), problem.fix))
    out.print()
    out.print(Text(f"{len(output.problems)} problem(s) found.", style="bold red"))
    return 1
