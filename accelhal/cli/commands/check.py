"""``accelhal check [NAME]``: run the conformance suite against a backend.

The suite is :func:`accelhal.testing.run_suite` (``run_suite(backend, extra_args) ->
int``, pytest's exit status), imported only when this command runs. On a terminal, one
progress line counts the passed, failed and skipped tests as they end (fed by the pytest
plugin :mod:`accelhal.cli.supervision.suite_progress`); a summary table follows. pytest's own output
(a character per test, its summary) is shown only with ``-v``, or when the run ends
without a verdict (a usage or collection error). Arguments after ``--`` go to pytest
(``accelhal check cuda -- -k streams``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from accelhal.cli.output import render
from accelhal.cli.output.models import CheckOutput, FailedTest
from accelhal.cli.supervision import suite_progress
from accelhal.errors import AccelhalError, IdentityDeclarationWarning
from accelhal.extras import install_advice
from accelhal.text import visible

RunSuite = Callable[[str, list[str]], int]
"""The conformance kit's entry point: ``run_suite(backend, extra_args) -> exit status``."""

QUIET_PYTEST = ["-p", "accelhal.cli.supervision.suite_progress", "-qq", "--tb=no"]
"""Arguments ``check`` gives pytest before the user's own: the progress plugin, little output."""

PYTEST_EXITS = {
    1: "some tests failed",
    2: "pytest was interrupted (a test file failed to import, or Ctrl-C)",
    3: "pytest had an internal error",
    4: "pytest was given an argument it does not accept",
    5: "no test was collected (does the -k or -m expression match any?)",
}
"""What pytest's exit status means, printed under the summary when it is not 0."""

CHATTER_TAIL = 4000
"""Characters of pytest's own output shown when a run ends without a verdict (``check`` keeps it otherwise)."""


NAME = "check"
HELP = "run the conformance suite against the active or named backend"
DESCRIPTION = (
    "Run accelhal's conformance suite (accelhal.testing) against a backend, with live progress and a "
    "summary table. Arguments after '--' are passed to pytest."
)
USAGE = "accelhal check [-h] [--json] [-v] [--timeout SECONDS] [NAME] [-- PYTEST_ARGS ...]"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``check`` arguments."""
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="the backend to check (default: the active one); generic: the device torch.accelerator reports",
    )
    parser.set_defaults(pytest_args=[])


class Tally:
    """Counts outcomes and keeps the progress line up to date; a :class:`suite_progress.Listener`."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.task = progress.add_task("collecting the conformance tests", total=None) if progress else None
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
        self.failures: list[FailedTest] = []

    def started(self, total: int) -> None:
        """Size the progress bar."""
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, total=total, description=self.line())

    def finished(self, nodeid: str, outcome: str, message: str) -> None:
        """Count one test and advance the bar."""
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        if outcome in ("failed", "error"):
            self.failures.append(FailedTest(nodeid=nodeid, message=message))
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1, description=self.line())

    def teardown_error(self, nodeid: str, message: str) -> None:
        """Count a teardown error (the test itself was already counted)."""
        self.counts["error"] += 1
        self.failures.append(FailedTest(nodeid=nodeid, message=f"teardown: {message}"))

    def line(self) -> str:
        """``12 passed, 0 failed, 3 skipped`` (and the errors, when there are any)."""
        counts = self.counts
        text = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
        return text + (f", {counts['error']} errors" if counts["error"] else "")


def load_run_suite() -> RunSuite:
    """``accelhal.testing.run_suite``, or an :class:`AccelhalError` saying it is missing."""
    if importlib.util.find_spec("pytest") is None:
        raise AccelhalError(
            "accelhal check runs the conformance suite with pytest, which is not installed here; "
            f"install it with: {install_advice('kit')}"
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
    suite never runs hundreds of tests that would all fail the same way. ``generic``, where
    no backend has that name, is the backend of the device ``torch.accelerator`` reports,
    resolved as selection resolves it (or its error, saying why none is left to it).
    """
    from accelhal.errors import BackendUnavailableError
    from accelhal.selection import get_accelerator, registry
    from accelhal.selection.forced import unregistered_error
    from accelhal.selection.generic import GENERIC_ALIAS, resolve_generic
    from accelhal.testing.switching import use_accelerator

    if name is None:
        return get_accelerator().name
    name, requested_by, reg = name.strip().lower(), "accelhal check", registry()
    if name not in reg.backends:
        reg.load_deferred()  # a plugin not imported under a forced backend may provide it
    if name not in reg.backends and name == GENERIC_ALIAS:
        name, requested_by = resolve_generic(reg, requested_by).spec.name, f"{requested_by} {GENERIC_ALIAS}"
    if name not in reg.backends:
        raise unregistered_error(reg, name, requested_by)
    try:
        with use_accelerator(name):  # constructs it (or raises why it cannot), then restores the selection
            pass
    except BackendUnavailableError as exc:
        raise BackendUnavailableError(name, exc.reason, hint=exc.hint, requested_by=requested_by) from None
    return name


@contextlib.contextmanager
def _terminal() -> Iterator[IO[str] | None]:
    """A second handle on the terminal behind stdout (``None`` when stdout is not one).

    pytest captures file descriptors 1 and 2 while each test runs; the progress line is
    drawn on this duplicate, which the capture does not touch.
    """
    stdout = render.stdout()
    try:
        if not stdout.isatty():
            yield None
            return
        fd = os.dup(stdout.fileno())
    except (AttributeError, OSError, ValueError):  # stdout replaced by something without a descriptor
        yield None
        return
    with os.fdopen(fd, "w", encoding=stdout.encoding or "utf-8", errors="replace") as terminal:
        yield terminal


class _Done(ProgressColumn):
    """``tests run/tests collected``; nothing while the suite is still being collected."""

    def render(self, task: Task) -> Text:
        """The column's text for ``task``."""
        return Text("" if task.total is None else f"{task.completed:.0f}/{task.total:.0f}", style="dim")


def _progress(terminal: IO[str]) -> Progress:
    out = render.console()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=20),
        _Done(),
        console=Console(file=terminal, width=out.width, no_color=out.no_color, highlight=False),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )


def run_check(
    backend: str, run_suite: RunSuite, pytest_args: Sequence[str], *, live: bool, verbose: bool = False
) -> CheckOutput:
    """Run the suite for ``backend`` and count what happened.

    ``live`` draws a progress line with the counts on a terminal. pytest's own output goes
    to stderr when ``verbose``; otherwise it is kept, and shown (on stderr) only when the
    run ended without a verdict on every test (a usage error, a collection error, no test).
    """
    arguments = (
        [*QUIET_PYTEST, *pytest_args]
        if not verbose
        else ["-p", "accelhal.cli.supervision.suite_progress", *pytest_args]
    )
    chatter = io.StringIO()
    with _terminal() if live and not verbose else contextlib.nullcontext() as terminal:
        progress = _progress(terminal) if terminal is not None else None
        tally = Tally(progress)
        suite_progress.LISTENER = tally
        try:
            with progress or contextlib.nullcontext(), contextlib.redirect_stdout(sys.stderr if verbose else chatter):
                exit_code = int(run_suite(backend, arguments))
        finally:
            suite_progress.LISTENER = None
    if exit_code not in (0, 1) and not verbose:
        sys.stderr.write("\n".join(visible(line) for line in chatter.getvalue()[-CHATTER_TAIL:].split("\n")))
    return CheckOutput(
        backend=backend,
        exit_code=exit_code,
        passed=tally.counts["passed"],
        failed=tally.counts["failed"],
        skipped=tally.counts["skipped"],
        errors=tally.counts["error"],
        failures=tally.failures,
    )


def resolve_and_tell(name: str | None) -> str:
    """:func:`resolve_backend`, telling on stderr where the backend's class declares its identity (deprecated).

    Python hides a ``DeprecationWarning`` raised outside ``__main__``, and the class statement that
    raises this one is a plugin's: ``check`` is where its author looks, so it shows it as a note.
    """
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", IdentityDeclarationWarning)
            return resolve_backend(name)
    finally:  # also where the backend cannot be resolved: the class may be why
        for told in caught:
            if issubclass(told.category, IdentityDeclarationWarning):
                render.note(f"{told.filename}:{told.lineno}: {told.message}")
            else:  # what Python would have shown anyway
                warnings.showwarning(told.message, told.category, told.filename, told.lineno, told.file, told.line)


def run(args: argparse.Namespace) -> int:
    """Run the suite and print the summary; the exit status is the suite's."""
    run_suite = load_run_suite()
    backend = resolve_and_tell(args.name)
    output = run_check(backend, run_suite, args.pytest_args, live=not args.json, verbose=args.verbose)
    if args.json:
        render.print_json(output)
        return output.exit_code
    out = render.console()
    summary = render.table(out, "backend", "passed", "failed", "skipped", "errors", "exit", title="Conformance")
    summary.add_row(
        backend, str(output.passed), str(output.failed), str(output.skipped), str(output.errors), str(output.exit_code)
    )
    out.print(summary)
    if output.exit_code in PYTEST_EXITS:
        render.field(out, f"exit status {output.exit_code}", PYTEST_EXITS[output.exit_code])
    if output.failures:
        failed = render.table(out, "test", "message", title="Failures")
        for failure in output.failures:
            failed.add_row(failure.nodeid.rpartition("/")[2], failure.message)
        out.print(failed)
    return output.exit_code
