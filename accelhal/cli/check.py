"""``accelhal check [NAME]``: run the conformance suite against a backend.

The suite is :func:`accelhal.testing.run_suite` (``run_suite(backend, extra_args) ->
int``, pytest's exit status), imported only when this command runs. Progress is drawn
live through the pytest plugin :mod:`accelhal.cli.suite_progress`; a summary table
follows. Arguments after ``--`` go to pytest (``accelhal check cuda -- -k streams``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
from collections.abc import Callable, Sequence

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from accelhal.cli import render, suite_progress
from accelhal.cli.models import CheckOutput, FailedTest
from accelhal.errors import AccelhalError

RunSuite = Callable[[str, list[str]], int]
"""The conformance kit's entry point: ``run_suite(backend, extra_args) -> exit status``."""

QUIET_PYTEST = ["-p", "accelhal.cli.suite_progress", "-qq", "--tb=no"]
"""Arguments ``check`` gives pytest before the user's own: the progress plugin, little output."""


NAME = "check"
HELP = "run the conformance suite against the active or named backend"
DESCRIPTION = (
    "Run accelhal's conformance suite (accelhal.testing) against a backend, with live progress and a "
    "summary table. Arguments after '--' are passed to pytest."
)
USAGE = "accelhal check [-h] [--json] [NAME] [-- PYTEST_ARGS ...]"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``check`` arguments."""
    parser.add_argument("name", nargs="?", metavar="NAME", help="the backend to check (default: the active one)")
    parser.set_defaults(pytest_args=[])


class Tally:
    """Counts outcomes and drives the progress bar; a :class:`suite_progress.Listener`."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.task = progress.add_task("conformance", total=None) if progress else None
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
        self.failures: list[FailedTest] = []

    def started(self, total: int) -> None:
        """Size the progress bar."""
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, total=total)

    def finished(self, nodeid: str, outcome: str, message: str) -> None:
        """Count one test and advance the bar."""
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        if outcome in ("failed", "error"):
            self.failures.append(FailedTest(nodeid=nodeid, message=message))
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1, description=nodeid.rpartition("::")[2][:30])

    def teardown_error(self, nodeid: str, message: str) -> None:
        """Count a teardown error (the test itself was already counted)."""
        self.counts["error"] += 1
        self.failures.append(FailedTest(nodeid=nodeid, message=f"teardown: {message}"))


def load_run_suite() -> RunSuite:
    """``accelhal.testing.run_suite``, or an :class:`AccelhalError` saying it is missing."""
    if importlib.util.find_spec("pytest") is None:
        raise AccelhalError(
            "accelhal check runs the conformance suite with pytest, which is not installed here; "
            "install it with: pip install 'accelhal[test]' (or pip install pytest)"
        )
    try:
        from accelhal import testing
    except ImportError as exc:
        raise AccelhalError(
            f"the conformance suite is not available: importing accelhal.testing failed ({exc}); "
            "it ships with accelhal from the version that includes the conformance kit"
        ) from exc
    run_suite: RunSuite | None = getattr(testing, "run_suite", None)
    if run_suite is None:
        raise AccelhalError("the conformance suite is not available: accelhal.testing has no run_suite()")
    return run_suite


def resolve_backend(name: str | None) -> str:
    """``name`` checked against the registry and constructed once, or the active backend's name.

    A name nobody registers, or a backend that cannot be constructed here, raises the
    selection's own error (one message with the probe's reason and hint), so that the
    suite never runs hundreds of tests that would all fail the same way.
    """
    from accelhal.errors import BackendUnavailableError, UnknownBackendError
    from accelhal.selection import get_accelerator, registry
    from accelhal.testing.switching import use_accelerator

    if name is None:
        return get_accelerator().name
    name = name.strip().lower()
    known = registry().names()
    if name not in known:
        raise UnknownBackendError(name, known, variable="accelhal check")
    try:
        with use_accelerator(name):  # constructs it (or raises why it cannot), then restores the selection
            pass
    except BackendUnavailableError as exc:
        raise BackendUnavailableError(name, exc.reason, hint=exc.hint, requested_by="accelhal check") from None
    return name


def run_check(backend: str, run_suite: RunSuite, pytest_args: Sequence[str], *, live: bool) -> CheckOutput:
    """Run the suite for ``backend`` and count what happened; ``live`` draws a progress bar."""
    progress = (
        Progress(
            TextColumn("{task.description:<30}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=render.console(),
            transient=True,
        )
        if live
        else None
    )
    tally = Tally(progress)
    suite_progress.LISTENER = tally
    try:
        with progress if progress is not None else contextlib.nullcontext(), contextlib.redirect_stdout(sys.stderr):
            exit_code = int(run_suite(backend, [*QUIET_PYTEST, *pytest_args]))
    finally:
        suite_progress.LISTENER = None
    return CheckOutput(
        backend=backend,
        exit_code=exit_code,
        passed=tally.counts["passed"],
        failed=tally.counts["failed"],
        skipped=tally.counts["skipped"],
        errors=tally.counts["error"],
        failures=tally.failures,
    )


def run(args: argparse.Namespace) -> int:
    """Run the suite and print the summary; the exit status is the suite's."""
    run_suite = load_run_suite()
    backend = resolve_backend(args.name)
    output = run_check(backend, run_suite, args.pytest_args, live=not args.json)
    if args.json:
        render.print_json(output)
        return output.exit_code
    out = render.console()
    summary = render.table(out, "backend", "passed", "failed", "skipped", "errors", "exit", title="Conformance")
    summary.add_row(
        backend, str(output.passed), str(output.failed), str(output.skipped), str(output.errors), str(output.exit_code)
    )
    out.print(summary)
    if output.failures:
        failed = render.table(out, "test", "message", title="Failures")
        for failure in output.failures:
            failed.add_row(failure.nodeid.rpartition("/")[2], failure.message)
        out.print(failed)
    return output.exit_code
