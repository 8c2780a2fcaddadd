"""The ``accelhal`` command: what accelhal sees on this machine, and why it chose that.

Subcommands: ``info``, ``list``, ``explain [NAME]``, ``doctor``, ``check [NAME]``, ``schema
[COMMAND]`` and ``ray-resources``, each with ``--json`` (one JSON document on stdout, whichever
way the command ends). A user mistake is one ``accelhal: error:`` line and exit status 2, never a
traceback; each call into a device's runtime is bounded by ``--timeout``
(:mod:`accelhal.cli.supervision.deadline`). See ``docs/reference/cli.md``.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from accelhal._version import __version__
from accelhal.cli.output.status import FAILED, USAGE_ERROR
from accelhal.cli.output.warnings_filter import hide_torch_numpy_warning
from accelhal.cli.supervision import deadline


def subcommands() -> tuple[ModuleType, ...]:
    """Return the subcommands' modules, in the order ``--help`` lists them.

    Each names its subcommand (``NAME``, ``HELP``, ``DESCRIPTION``, optional ``USAGE``), adds its
    arguments in an optional ``configure(parser)`` and runs it in ``run(args) -> int``. Importing them
    defines the reports' pydantic models (:class:`~accelhal.errors.MetadataError` where pydantic
    cannot list the installed distributions).
    """
    from accelhal.cli.commands import check, doctor, explain, info, listing, ray_resources, schema

    return info, listing, explain, doctor, check, schema, ray_resources


class UsageError(Exception):
    """A usage error argparse found: the parser's ``prog`` and its message."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog, self.message = prog, message


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors propagate (:class:`UsageError`) for :func:`main` to report."""

    def error(self, message: str) -> NoReturn:
        """Print the usage, then raise the error (argparse prints it and exits)."""
        self.print_usage(sys.stderr)
        raise UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser: global options and one subparser per subcommand."""
    parser = _Parser(
        prog="accelhal",
        description="What accelhal sees on this machine, and why it chose that.",
        epilog="Every subcommand takes --json; 'accelhal schema' prints the JSON Schemas.",
    )
    parser.add_argument("--version", action="version", version=f"accelhal {__version__}")
    verbose_help = "also print accelhal's log messages, and pytest's own output in 'check' (to stderr)"
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    json_flag = _Parser(add_help=False)
    json_flag.add_argument("--json", action="store_true", help="print JSON (see 'accelhal schema')")
    # also after the subcommand (`accelhal check -v`); SUPPRESS keeps a global -v from being reset
    json_flag.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help)
    json_flag.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="the longest a call into a device's runtime may take before it is called hung and the command goes on "
        f"without it (default: {deadline.TIMEOUT_VARIABLE}, else {deadline.DEFAULT_TIMEOUT:g})",
    )
    for module in subcommands():
        command = sub.add_parser(
            module.NAME,
            parents=[json_flag],
            help=module.HELP,
            description=module.DESCRIPTION,
            usage=getattr(module, "USAGE", None),
        )
        command.set_defaults(handler=module.run)
        configure = getattr(module, "configure", None)
        if configure is not None:
            configure(command)
    return parser


def _seconds(text: str) -> float:
    """A number of seconds for ``--timeout``, as the variable it overrides (``ACCELHAL_TIMEOUT``) takes it."""
    from accelhal.process.settings import seconds, seconds_range
    from accelhal.text import quote

    value = seconds(text, deadline.TIMEOUT_VARIABLE)
    if value is None:
        raise argparse.ArgumentTypeError(
            f"{quote(text)} is not {seconds_range(deadline.TIMEOUT_VARIABLE)} (for example 30)"
        )
    return value


def _configure_logging(verbose: bool) -> None:
    """Keep accelhal's own warnings off the screen unless ``--verbose``: the output says it all."""
    logger = logging.getLogger("accelhal")
    for previous in [h for h in logger.handlers if getattr(h, "accelhal_cli", False)]:
        logger.removeHandler(previous)  # main() may run more than once in a process
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        from accelhal.cli.output.render import VisibleFormatter

        handler.setFormatter(VisibleFormatter("%(levelname)s %(message)s"))
        logger.setLevel(logging.INFO)
    else:
        handler = logging.NullHandler()
    handler.accelhal_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)


def main(argv: Sequence[str] | None = None, *, bounded: bool = False) -> int:
    """Run the command with ``argv`` (``sys.argv[1:]`` by default); returns the exit status.

    With ``bounded`` (the ``accelhal`` program), the command runs in a worker process whose calls
    into device runtimes are bounded by ``--timeout`` (:mod:`accelhal.cli.supervision.deadline`); without it, in
    this process, unbounded.
    """
    from accelhal.errors import AccelhalError, MetadataError

    hide_torch_numpy_warning()  # before anything imports torch
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:  # what follows '--' is for pytest (accelhal check)
        split = argv.index("--")
        argv, passthrough = argv[:split], argv[split + 1 :]
    try:
        parser = build_parser()
    except MetadataError as exc:  # no command can run, nor write its document: pydantic cannot define one
        sys.stderr.write(f"accelhal: error: {exc}\n")
        return FAILED
    try:
        args = _parse(parser, argv)
        if passthrough:
            if args.command != "check":
                parser.error(f"arguments after '--' are only for 'check', not for {args.command!r}")
            args.pytest_args = passthrough
    except UsageError as exc:
        _usage_error(exc, argv)
    _configure_logging(args.verbose)
    if not bounded:
        return _run(args)
    try:
        # doctor reports a bad variable as a finding, and schema reads none: both go on with the default
        timeout = deadline.resolve_timeout(args.timeout, os.environ)
    except AccelhalError as exc:
        if args.command not in ("doctor", "schema"):
            return _failed(args, str(exc), USAGE_ERROR)
        timeout = deadline.DEFAULT_TIMEOUT
    return deadline.supervise(functools.partial(_run, args), args.command, timeout, getattr(args, "json", False))


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``; under ``--json``, what ``--help`` or ``--version`` prints is one document."""
    if "--json" not in argv:
        return parser.parse_args(argv)
    import contextlib
    import io

    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            return parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
        from accelhal.cli.output import render
        from accelhal.cli.output.models import HelpOutput

        render.print_json(HelpOutput(command=_command_named(argv), text=printed.getvalue()))
        sys.stdout.flush()
        raise


def _command_named(argv: list[str]) -> str:
    """The subcommand ``argv`` names (its first word that is not an option), or ``""``."""
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words else ""


def _usage_error(exc: UsageError, argv: list[str]) -> NoReturn:
    """Say the usage error as argparse does, and under ``--json`` print the error document; exit with status 2."""
    from accelhal.cli.output import render

    sys.stderr.write(f"{exc.prog}: error: {exc.message}\n")
    if "--json" in argv:
        from accelhal.cli.output.models import ErrorOutput

        command = exc.prog.split()[1] if " " in exc.prog else _command_named(argv)
        render.print_json(ErrorOutput(command=command, error=exc.message))
    sys.stdout.flush()
    raise SystemExit(USAGE_ERROR)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command in this process; its exit status."""
    from accelhal.cli.output import render
    from accelhal.errors import AccelhalError

    try:
        status = int(args.handler(args))
        render.write("")  # what stdout still holds: a reader that went away is seen here, not at exit
        return status
    except AccelhalError as exc:
        return _failed(args, str(exc), USAGE_ERROR)
    except KeyboardInterrupt:
        if deadline.in_worker():
            raise  # a plugin's: the worker names the step that raised it
        return deadline.INTERRUPTED
    except BrokenPipeError:  # the reader went away (`accelhal list | head -1`): not an error
        render.close_output(1)
        return 0
    except Exception as exc:  # vendor or torch code raised where no check contained it: one message, no traceback
        from accelhal.cli.supervision.faults import describe

        return _failed(args, f"'accelhal {args.command}' stopped: {describe(exc)}", FAILED)


def _failed(args: argparse.Namespace, message: str, status: int) -> int:
    """Say ``message`` on stderr (and as the ``error`` JSON document with ``--json``); return ``status``."""
    from accelhal.cli.output import render

    render.error(message)
    if getattr(args, "json", False):
        from accelhal.cli.output.models import ErrorOutput

        render.print_json(ErrorOutput(command=args.command, error=message))
    return status


def console_main() -> NoReturn:
    """The ``accelhal`` program (and ``python -m accelhal``): :func:`main`, then exit with its status.

    Not for programmatic use (use :func:`main`): the command runs in a worker process
    (:mod:`accelhal.cli.supervision.deadline`), and this process, which followed it, ends without the
    interpreter's shutdown (``os._exit``, after flushing its output): it has nothing left to
    do, and after ``import torch`` the shutdown takes about 0.4 s.
    """
    from accelhal.cli.output.render import reopen_closed_streams

    reopen_closed_streams()  # a closed stdout or stderr (`>&-`) drops what goes there; the command goes on
    status = main(bounded=True)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass  # the reader went away: the worker said what it had to
    os._exit(status)
