"""``accelhal schema [COMMAND]``: the JSON Schema of each subcommand's ``--json`` output."""

from __future__ import annotations

import argparse
import json

from accelhal.cli.output import render
from accelhal.cli.output.models import OUTPUT_MODELS

NAME = "schema"
HELP = "the JSON Schema of every --json output"
DESCRIPTION = (
    "Print a JSON object mapping each subcommand to the JSON Schema its --json output conforms to, or"
    " only COMMAND's schema ('error': what any --json command prints when it fails before it has its own"
    " output). The output is JSON with or without --json."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``schema`` arguments."""
    parser.add_argument(
        "command_name", nargs="?", metavar="COMMAND", help=f"only this one's schema: {', '.join(sorted(OUTPUT_MODELS))}"
    )


def schemas() -> dict[str, dict[str, object]]:
    """Subcommand name -> the JSON Schema of its ``--json`` output."""
    return {name: model.model_json_schema() for name, model in OUTPUT_MODELS.items()}


def run(args: argparse.Namespace) -> int:
    """Print the schema(s) as JSON; an unknown ``COMMAND`` is a usage error (:class:`~accelhal.ConfigurationError`)."""
    everything = schemas()
    name = args.command_name
    if name is not None and name not in everything:
        from accelhal.errors import ConfigurationError

        raise ConfigurationError(f"no schema for {name!r}; the schemas: {', '.join(sorted(everything))}", value=name)
    chosen = everything if name is None else everything[name]
    render.write(render.json_text(json.dumps(chosen, indent=2)) + "\n")
    return 0
