"""The ``accelhal`` command: what accelhal sees on this machine, and why it chose that.

``accelhal info`` prints the active backend, how it was chosen and its devices;
``--json`` prints the same as JSON. User mistakes (a bad variable, an unavailable
forced backend) print one clear line and exit non-zero, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _info(args: argparse.Namespace) -> int:
    import accelhal

    report = accelhal.detect()
    if report.error is not None:
        print(f"accelhal: error: {report.error}", file=sys.stderr)
        return 2
    info = accelhal.get_accelerator().info()
    if args.json:
        print('{"detection": ' + report.model_dump_json() + ', "accelerator": ' + info.model_dump_json() + "}")
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]accelerator[/bold]: {info.name} (device type {info.device_type!r})")
    console.print(f"[bold]chosen by[/bold]: {report.rule} - {report.explanation}")
    table = Table("device", "description", "total memory", "available", "capability")
    for device in info.devices:
        table.add_row(
            device.name,
            device.description,
            f"{device.total_memory / 2**30:.1f} GiB",
            f"{device.available_memory / 2**30:.1f} GiB",
            device.capability or "-",
        )
    console.print(table)
    console.print(f"[bold]dtypes[/bold]: {', '.join(info.dtypes)}")
    console.print(f"[bold]communication backend[/bold]: {info.comm_backend}")
    console.print(f"[bold]capabilities[/bold]: {', '.join(info.capabilities) or 'none'}")
    console.print(f"torch {info.torch_version}, accelhal {info.accelhal_version}, python {info.python_version}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser (subcommands and their options)."""
    parser = argparse.ArgumentParser(prog="accelhal", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="the active backend, how it was chosen, and its devices")
    info.add_argument("--json", action="store_true", help="print JSON instead of tables")
    info.set_defaults(handler=_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    from accelhal.errors import AccelhalError

    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except AccelhalError as exc:
        print(f"accelhal: error: {exc}", file=sys.stderr)
        return 2
