"""Keep the step of plugin or device code running now, and name it in a warning when it does not return.

A *step* is a plugin's import, a backend's probe, an accelerator's construction
(:func:`accelhal.discovery.plugins.announce_step`) or a call the command makes into a device's
runtime (:func:`step`); it lasts until the next starts or its :func:`region` ends. :data:`listener`,
when set, is told of each step and its end. A daemon thread logs one warning on the ``accelhal`` logger
when a step has run for ``ACCELHAL_HANG_WARNING_SECONDS``; the step goes on. The warning: ``docs/clusters.md``;
how the thread sleeps and ends: ``docs/contributing.md``, "The watchdog".
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

_T = TypeVar("_T")

HANG_WARNING_VARIABLE = "ACCELHAL_HANG_WARNING_SECONDS"

logger = logging.getLogger("accelhal")


_KIND_WORDS = {"import": "its import", "instantiate": "its construction"}


class Step:
    """One step: what runs (``kind``: ``import``, ``probe``, ``instantiate`` or ``call``), for whom, since when."""

    __slots__ = ("backend", "bounded", "call", "floor", "kind", "plugin", "source", "started", "thread", "warned")

    def __init__(
        self,
        kind: str,
        plugin: str,
        backend: str = "",
        call: str = "",
        bounded: bool = True,
        floor: float = 0.0,
        source: str = "",
    ) -> None:
        self.kind, self.plugin, self.backend, self.call = kind, plugin, backend, call
        self.source = source
        """Where the plugin comes from (``built-in``, or its distribution and version), where known."""
        self.bounded = bounded
        """False for a step another process runs, which bounds it (``accelhal doctor``'s discovery child)."""
        self.floor = floor
        """Seconds the step is allowed whatever the deadline (``import torch`` takes seconds on a slow disk)."""
        self.thread = threading.get_ident()
        self.started = time.monotonic()
        self.warned = False

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The step's identity across processes, ``(kind, plugin, backend, call)``."""
        return (self.kind, self.plugin, self.backend, self.call)

    def describe(self) -> str:
        """``"backend 'acme' (its probe)"``, ``"plugin 'acme' (its import)"``, ``"backend 'acme' (info())"``."""
        who = f"backend {self.backend!r}" if self.backend else f"plugin {self.plugin!r}" if self.plugin else "torch"
        what = self.call or _KIND_WORDS.get(self.kind, f"its {self.kind}")
        return f"{who} ({what})"

    def skip_hint(self) -> str:
        """The variable that skips this step's plugin, or the backend choice that avoids it."""
        if self.plugin and self.plugin != "cpu":
            return f"ACCELHAL_BLOCK_PLUGINS={self.plugin} (or ACCELHAL_ACCELERATOR=cpu)"
        if not self.plugin and not self.backend:  # import torch: its autoload of vendor packages
            return "TORCH_DEVICE_BACKEND_AUTOLOAD=0"
        return "ACCELHAL_ACCELERATOR=cpu"


listener: Callable[[Step | None, bool], None] | None = None
"""Called with each step as it starts (``True``: it may raise, and the step then fails), as it resumes when a
step inside it ended (``False``), and with ``None`` when no step runs any more."""


class _State:
    def __init__(self) -> None:
        self.current: Step | None = None
        self.regions = 0
        self.pid = -1  # the process whose watchdog thread runs (a forked child starts its own)


_state = _State()


def current() -> Step | None:
    """The step running now, if any."""
    return _state.current


def enter(
    kind: str,
    plugin: str,
    backend: str = "",
    call: str = "",
    bounded: bool = True,
    floor: float = 0.0,
    source: str = "",
) -> None:
    """Start a step (ending the one before); :data:`listener` may raise to make it fail.

    This is the one channel on which a step is announced: whoever follows the steps (the
    command's deadline, doctor's discovery child) sets or wraps :data:`listener`.
    """
    step = Step(kind, plugin, backend, call, bounded, floor, source)
    _state.current = step
    if listener is not None:
        listener(step, True)


def leave(resume: Step | None = None) -> None:
    """End the running step, if any, going back to ``resume`` (the step a region ran in, or none)."""
    state = _state
    if state.current is resume:
        return
    state.current = resume
    if listener is not None:
        listener(resume, False)


class region:  # noqa: N801  (used as a function: ``with watchdog.region():``)
    """Run a block whose steps end with it; the step it ran in, if any, goes on after it.

    The first region of a selection starts the watchdog thread. A class, not a generator:
    selection enters one per plugin and per probe.
    """

    __slots__ = ("outer",)

    def __enter__(self) -> None:
        state = _state
        if state.pid != os.getpid():
            _start()
        state.regions += 1
        self.outer = state.current

    def __exit__(self, *exc_info: object) -> None:
        _state.regions -= 1
        leave(self.outer)


@contextlib.contextmanager
def step(kind: str, plugin: str, backend: str = "", call: str = "", floor: float = 0.0) -> Iterator[None]:
    """Run a block as one step (see :func:`enter`); it ends with the block."""
    with region():
        enter(kind, plugin, backend, call, floor=floor)
        yield


def stepped(kind: str, plugin: str, backend: str, function: Callable[[], _T]) -> Callable[[], _T]:
    """``function`` run as one step: what it raises, :data:`listener`'s refusal included, propagates from the call."""

    def run() -> _T:
        with step(kind, plugin, backend):
            return function()

    return run


def where(step: Step) -> str:
    """The function ``step``'s thread is in, with its file and line (``"device_count (/x/acme.py:40)"``)."""
    frame = sys._current_frames().get(step.thread)
    if frame is None:
        return "an unknown place"
    code = frame.f_code
    return f"{code.co_name} ({code.co_filename}:{frame.f_lineno})"


def _delay() -> float:
    """``ACCELHAL_HANG_WARNING_SECONDS``, read on this thread; its default where the value is bad.

    A bad value is refused where selection reads its settings
    (:meth:`~accelhal.process.settings.Settings.from_environ`, on the caller's thread), just after
    the region that started this thread; raising here would end this thread, and raising in
    :func:`_start` would fail the step being entered (``import torch`` records that as torch's failure).
    """
    from accelhal.process.settings import SECONDS_DEFAULTS, read_seconds

    try:
        return read_seconds(HANG_WARNING_VARIABLE)
    except Exception:  # ConfigurationError (imported only for a bad value), raised to the caller by Settings
        return SECONDS_DEFAULTS[HANG_WARNING_VARIABLE]


def _start() -> None:
    """Start the watchdog thread of this process (none runs: the first region, or the last one ended)."""
    _state.pid = os.getpid()
    _thread.start_new_thread(_watch, ())  # threading.Thread would wait for it to start: a switch per selection


def _watch() -> None:
    """Sleep until the running step may have run too long; log it once; end when no region is left."""
    state = _state
    delay = _delay()
    time.sleep(delay)  # selection usually ends long before: then this thread ends without having done anything
    while True:
        running = state.current
        if running is None:
            if state.regions <= 0:
                state.pid = -1  # the next region starts a new thread
                return
            time.sleep(delay)
            continue
        left = running.started + delay - time.monotonic()
        if left > 0:
            time.sleep(left)
            continue
        if not running.warned:
            running.warned = True
            logger.warning(
                "accelhal: %s has not answered for %g s (in %s); to skip it: %s",
                running.describe(),
                delay,
                where(running),
                running.skip_hint(),
            )
        while state.current is running:  # until the step ends
            time.sleep(min(delay, 1.0))
