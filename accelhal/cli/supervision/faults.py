"""What vendor or torch code raises, contained: a finding or one message, never a traceback.

The commands call into a device's runtime through :func:`call`, which turns any exception into a
:class:`RuntimeCallError` naming the device, the call and the exception. :func:`describe` names an
exception that no call site expected, with the line of accelhal's own code that called out.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from accelhal.text import shorten

_T = TypeVar("_T")

MESSAGE_LIMIT = 300
"""Characters of an exception's message kept in a finding."""


class RuntimeCallError(Exception):
    """A call into a device's runtime (vendor or torch code) raised ``error``."""

    def __init__(self, device: str, call: str, error: BaseException) -> None:
        self.device, self.call, self.error = device, call, error
        super().__init__(f"the {device!r} runtime raised in {call}: {exception_text(error)}")


def exception_text(exc: BaseException) -> str:
    """``"RuntimeError: message"`` (the message shortened), or the type alone when it has none."""
    message = shorten(str(exc).strip(), MESSAGE_LIMIT)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def call(device: str, name: str, function: Callable[[], _T]) -> _T:
    """``function()`` as one bounded step (:func:`bounded`); what it raises becomes a :class:`RuntimeCallError`.

    The error names ``device`` and call ``name``; a call refused because it hung before raises so too.
    """
    try:
        with bounded(device, name):
            return function()
    except Exception as exc:
        raise RuntimeCallError(device, name, exc) from exc


def bounded(device: str, name: str) -> contextlib.AbstractContextManager[None]:
    """A block that calls ``name`` in ``device``'s runtime, as one step of :mod:`accelhal.process.watchdog`.

    The command bounds it (:mod:`accelhal.cli.supervision.deadline`): entering it raises
    :class:`~accelhal.cli.supervision.deadline.DeviceCallHungError` where the same call hung in an earlier attempt.
    """
    from accelhal.discovery import plugins
    from accelhal.process import watchdog

    known = plugins.current_registry()
    registration = known.backends.get(device) if known is not None else None
    return watchdog.step("call", registration.plugin.name if registration else "", device, name)


def _own_directories() -> tuple[str, ...]:
    """Where accelhal's own code lives: the ``accelhal`` package and the built-in backends' package."""
    found = [Path(__file__).resolve().parents[1]]
    spec = importlib.util.find_spec("accelhal_backends")
    if spec is not None:
        found += [Path(p).resolve() for p in spec.submodule_search_locations or []]
    return tuple(f"{directory}{os.sep}" for directory in found)


def describe(exc: BaseException) -> str:
    """``exc`` and where accelhal's code called the code that raised it.

    ``"RuntimeError: no name (from 'str(get_name(device_index))' in device_description)"``:
    the last frame of accelhal's own code before the exception left it, else the innermost one; none
    for an exception whose message names its place already (``names_its_place``).
    """
    if getattr(exc, "names_its_place", False):  # a refused call that hung: its message says where it was stuck
        return exception_text(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    directories = _own_directories()
    own = [i for i, frame in enumerate(frames) if str(Path(frame.filename).resolve()).startswith(directories)]
    frame = frames[own[-1]] if own else (frames[-1] if frames else None)
    if frame is None:
        return exception_text(exc)
    line = (frame.line or "").strip()
    at = f"{line!r} in {frame.name}" if line else f"{frame.name}, line {frame.lineno}"
    return f"{exception_text(exc)} (from {at})"
