"""A pytest plugin that reports the conformance suite's progress to ``accelhal check``.

``accelhal check`` passes ``-p accelhal.cli.supervision.suite_progress`` to the suite and sets
:data:`LISTENER` first; pytest then calls the hooks below for every test. When the
suite runs in another process the listener is unset and the hooks do nothing.

(PYTEST_DONT_REWRITE: this module is imported before pytest starts; there is nothing
to rewrite in it.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pytest is a test-time dependency: `accelhal info` must work without it
    import pytest


class Listener(Protocol):
    """What receives the suite's progress."""

    def started(self, total: int) -> None:
        """``total`` tests were collected."""

    def finished(self, nodeid: str, outcome: str, message: str) -> None:
        """Test ``nodeid`` ended: ``passed``, ``failed``, ``skipped`` or ``error``."""

    def teardown_error(self, nodeid: str, message: str) -> None:
        """Test ``nodeid``'s teardown failed (after its outcome was reported)."""


LISTENER: Listener | None = None
"""The receiver of this run's progress, set by ``accelhal check``."""


def _message(report: pytest.TestReport) -> str:
    """The exception's one-line message (not the traceback), whatever ``--tb`` says."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(getattr(crash, "message", "") or report.longreprtext).strip()
    return text.splitlines()[0] if text else ""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Tell the listener how many tests will run."""
    if LISTENER is not None:
        LISTENER.started(len(session.items))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Run each test as one step of the command, which bounds it (:mod:`accelhal.cli.supervision.deadline`).

    A test stuck in a device call is named with its stack, and in the command's next attempt
    its setup fails with :class:`~accelhal.cli.supervision.deadline.DeviceCallHungError` (an ``error``).
    """
    from accelhal.process import watchdog

    if watchdog.listener is not None:  # the command's worker
        backend = item.config.getoption("--accelhal-backend", default=None) or "?"
        watchdog.enter("call", "", backend, f"conformance test {item.nodeid}")


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """The test's step has ended."""
    from accelhal.process import watchdog

    watchdog.leave()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Tell the listener each test's outcome once."""
    if LISTENER is None:
        return
    if report.when == "call":
        LISTENER.finished(report.nodeid, report.outcome, _message(report))
    elif report.when == "setup" and not report.passed:
        LISTENER.finished(report.nodeid, "skipped" if report.skipped else "error", _message(report))
    elif report.when == "teardown" and report.failed:
        LISTENER.teardown_error(report.nodeid, _message(report))
