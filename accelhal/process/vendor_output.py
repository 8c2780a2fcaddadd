"""Keep what vendor code writes to standard output off accelhal's own standard output.

:func:`stdout_to_stderr` wraps every import and probe of vendor code: what Python and native code write to file
descriptor 1 inside the block goes to standard error, and the text is kept for the report (:class:`Captured`),
so that ``accelhal info --json`` still prints one valid JSON document. Not meant for blocks during which other
threads write to standard output (that is caught too). How it works, and an example: ``docs/contributing.md``,
"Vendor output".
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

_STDOUT = 1
_STDERR = 2
_files: list[int] = []
"""One private file per nesting depth, created on first use and reused (truncated) after."""
_identities: list[tuple[int, int] | None] = []
"""The device and inode of each of :data:`_files`: a file is reused only while its descriptor still names it."""
_depth = threading.local()
_fflush: list[Callable[[Any], int]] = []
"""The C library's ``fflush``, looked up once."""


class Captured:
    """What was written to standard output inside one :func:`stdout_to_stderr` block."""

    __slots__ = ("damage", "text")

    def __init__(self) -> None:
        self.text = ""
        """The text written (decoded as UTF-8, undecodable bytes replaced); set when the block ends."""
        self.damage = ""
        """What the block did to the descriptors it did not open, as a predicate (``""``: nothing):
        ``closed file descriptors it did not open ...``; standard output then goes to standard error."""


def _identity(fd: int) -> tuple[int, int] | None:
    """The device and inode behind ``fd``; ``None`` when it is closed."""
    try:
        status = os.fstat(fd)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _private_file(depth: int) -> int:
    if len(_files) > depth and _identity(_files[depth]) != _identities[depth]:
        del _files[depth:], _identities[depth:]  # closed by vendor code, or its number now another file's
    while len(_files) <= depth:
        flag = getattr(os, "O_TMPFILE", 0)
        if flag:
            try:
                _files.append(os.open(os.environ.get("TMPDIR") or "/tmp", flag | os.O_RDWR, 0o600))
                continue
            except OSError:
                pass  # a file system without O_TMPFILE support
        import tempfile

        with tempfile.TemporaryFile() as handle:
            _files.append(os.dup(handle.fileno()))
    while len(_identities) < len(_files):
        _identities.append(_identity(_files[len(_identities)]))
    fd = _files[depth]
    if os.lseek(fd, 0, os.SEEK_END):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _flush_all() -> None:
    """Flush Python's ``sys.stdout`` and the C library's stdio buffers (``fflush(NULL)``)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        if not _fflush:
            import ctypes

            _fflush.append(ctypes.CDLL(None).fflush)
        _fflush[0](None)


@contextlib.contextmanager
def _line_buffered_stdout() -> Iterator[None]:
    """Make ``sys.stdout`` flush at each line inside the block, where it can be reconfigured."""
    stream = sys.stdout
    was = getattr(stream, "line_buffering", None)
    try:
        if was is False:
            stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    except Exception:  # a replaced sys.stdout may refuse; the order is then the stream's own
        was = None
    try:
        yield
    finally:
        if was is False:
            with contextlib.suppress(Exception):
                stream.reconfigure(line_buffering=False)  # type: ignore[union-attr]


def _stdout_lost() -> str:
    """Send standard output to standard error (the block closed accelhal's copy of it); say what happened."""
    with contextlib.suppress(OSError):
        os.dup2(_STDERR, _STDOUT)
    return (
        "closed file descriptors it did not open (accelhal's copy of standard output among them); "
        "standard output now goes to standard error"
    )


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[Captured]:
    """Send what is written to standard output inside the block to standard error, and keep it.

    Nestable; a process whose descriptor 1 is closed runs the block unchanged. Not meant
    for blocks that other threads write to standard output during (they are caught too).
    """
    captured = Captured()
    depth = getattr(_depth, "value", 0)
    try:
        _flush_all()
        saved = os.dup(_STDOUT)
    except OSError:
        yield captured
        return
    try:
        private = _private_file(depth)
        os.dup2(private, _STDOUT)
    except OSError:
        os.close(saved)
        yield captured
        return
    _depth.value = depth + 1
    try:
        with _line_buffered_stdout():
            yield captured
    finally:
        _depth.value = depth
        _flush_all()
        try:
            os.dup2(saved, _STDOUT)
            os.close(saved)
        except OSError:  # the block closed descriptors it did not open, accelhal's copy of stdout among them
            captured.damage = _stdout_lost()
        try:
            size = os.lseek(private, 0, os.SEEK_END) if _identity(private) == _identities[depth] else 0
            data = os.pread(private, size, 0) if size else b""
        except OSError:
            data = b""
        if data:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            with contextlib.suppress(OSError):
                view = memoryview(data)
                while view:
                    view = view[os.write(_STDERR, view) :]
            captured.text = data.decode("utf-8", errors="replace")
