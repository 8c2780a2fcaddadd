r"""Drawing for the ``accelhal`` command: consoles, tables, colours and JSON.

Everything is drawn with rich, for an 80-column terminal; ``NO_COLOR`` removes the colour only,
and piped output is plain text. Words accelhal did not write are shown as text: every helper
passes its strings through :func:`accelhal.text.visible`, so a command builds its lines from
:func:`text` and :func:`lines`, never from ``rich.text.Text`` of a string it was given;
:func:`print_json` escapes the controls JSON leaves raw (``\u009b``). See
``docs/reference/cli.md``, "Layout and colour" and "A plugin's words are shown as text".
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from accelhal.contract.spec import Status
from accelhal.text import CONTROL_CHARACTERS, hint_sentence, sentence, visible

if TYPE_CHECKING:
    from accelhal.report import TorchImportReport

STATUS_STYLES: dict[str, str] = {
    Status.AVAILABLE.value: "green",
    Status.NOT_INSTALLED.value: "dim",
    Status.NO_DEVICE.value: "yellow",
    Status.BROKEN.value: "red",
    Status.REPLACED.value: "yellow",
    Status.PROBE_ERROR.value: "red",
    Status.INVALID.value: "red",
    Status.NOT_PROBED.value: "dim",
    "loaded": "green",
    "failed": "red",
    "blocked": "yellow",
    "not-allowed": "yellow",
    "autoload-disabled": "yellow",
    "deferred": "dim",
}
"""Colour of each probe status and plugin state."""

MAX_WIDTH = 80
"""Output is laid out for this many columns, even on a wider terminal."""
MIN_WIDTH = 40
"""Nor for fewer, even where ``COLUMNS`` says less (``COLUMNS=0`` would print nothing at all)."""


class _TrimmedLines:
    """A text stream that writes each line to ``stream`` without its trailing blanks (rich pads cells)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending = ""

    @property
    def encoding(self) -> str:
        """The encoding of ``stream`` (rich chooses its box characters by it)."""
        return getattr(self.stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        """Write the complete lines of what was written so far, trimmed; keep an unfinished one."""
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.stream.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        """Write an unfinished line as it is, and flush ``stream``."""
        if self.pending:
            self.stream.write(self.pending)
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        """Never a terminal: only piped output is trimmed."""
        return False


class _Stdout:
    """The command's stdout, owned here: ``sys.stdout``, or the stream :func:`own_stdout` took."""

    stream: TextIO | None = None


_stdout = _Stdout()


def stdout() -> TextIO:
    """The stream the command's output goes to; everything the command prints on stdout is written there."""
    return _stdout.stream or sys.stdout


def own_stdout() -> None:
    """Take file descriptor 1 for the command's output, and point descriptor 1 at stderr.

    For the command's worker, before any plugin code runs: what anything else writes to descriptor 1
    from then on (a plugin's thread, a C library, ``print`` through ``sys.stdout``, which becomes
    line-buffered as stderr is) goes to stderr, and stdout holds the command's output only
    (:func:`stdout`, on a copy of the descriptor: the same terminal, width and colour). Never for a
    program that calls :func:`accelhal.cli.main`: its descriptors are its own.
    """
    previous = sys.stdout
    previous.flush()
    encoding = getattr(previous, "encoding", None) or "utf-8"
    errors = getattr(previous, "errors", None) or "strict"
    owned = os.dup(1)  # not inherited by the programs the command starts
    _stdout.stream = open(owned, "w", encoding=encoding, errors=errors)  # noqa: SIM115  (each write flushes)
    os.dup2(2, 1)
    with contextlib.suppress(Exception):  # a replaced sys.stdout may refuse: its order is then its own
        previous.reconfigure(line_buffering=True)  # type: ignore[union-attr]


def close_output(fd: int) -> None:
    """Send what the command still writes to its stdout (``fd`` 1) or stderr (2) to ``os.devnull``.

    The reader of its pipe went away: neither the command nor the interpreter's exit then fails on it
    (``accelhal list | head -1``).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    if fd == 1 and _stdout.stream is not None:
        os.dup2(devnull, _stdout.stream.fileno(), inheritable=False)
    else:
        os.dup2(devnull, fd)
    os.close(devnull)


def reopen_closed_streams() -> None:
    """Put ``os.devnull`` behind a closed stdout or stderr (``accelhal list >&-``), and give Python a stream on it.

    A program started with a descriptor closed has ``sys.stdout`` (or ``sys.stderr``) ``None``, and the
    next file it opens would take the descriptor's number. The command then goes on as when the reader of
    its pipe went away: what it writes there is dropped, and its exit status is its own.
    """
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:  # closed: what the command writes there goes nowhere, as to a reader that went away
            devnull = os.open(os.devnull, os.O_WRONLY)  # the lowest free descriptor: fd itself where 0 is open
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False))  # noqa: SIM115


class _Console(Console):
    """A rich console on file descriptor ``fd`` whose closed pipe ends the output, not the command."""

    def __init__(self, fd: int, **options: Any) -> None:
        super().__init__(**options)
        self.fd = fd

    def on_broken_pipe(self) -> None:
        """Write nothing more (rich's own answer is to exit with status 1)."""
        self.quiet = True
        close_output(self.fd)


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr), :data:`MIN_WIDTH` to :data:`MAX_WIDTH` columns wide.

    Piped, it is :data:`MAX_WIDTH` wide whatever ``COLUMNS`` says, and its lines carry no trailing
    blanks (a pasted bug report stays clean). When the reader of the pipe goes away, the console
    writes nothing more and the command goes on.
    """
    fd = 2 if stderr else 1
    owned = None if stderr else _stdout.stream
    out: Console = _Console(fd, file=owned, stderr=stderr, highlight=False)
    if not out.is_terminal:  # piped: 80 columns whatever COLUMNS says (a terminal's width, and there is none)
        trimmed = cast(TextIO, _TrimmedLines(sys.stderr if stderr else stdout()))  # a text stream, as rich needs
        out = _Console(fd, file=trimmed, highlight=False, width=MAX_WIDTH)
    elif owned is not None and not os.environ.get("COLUMNS", "").isdigit():  # rich would ask descriptor 1: stderr
        with contextlib.suppress(OSError):
            out.width = os.get_terminal_size(owned.fileno()).columns or out.width
    if not MIN_WIDTH <= out.width <= MAX_WIDTH:
        out.width = min(max(out.width, MIN_WIDTH), MAX_WIDTH)
    return out


def text(value: str, style: str = "") -> Text:
    """``value`` as text in ``style``, its control characters made visible (:func:`accelhal.text.visible`)."""
    return Text(visible(value), style=style)


def lines(*pieces: Text | str) -> Text:
    """One cell of several lines, one per piece (a string is made visible as :func:`text` makes it)."""
    return Text("\n").join(text(piece) if isinstance(piece, str) else piece for piece in pieces)


def assemble(*pieces: str | tuple[str, str]) -> Text:
    """One line of ``pieces`` (a string, or a ``(string, style)``), each made visible as :func:`text` makes it."""
    return Text.assemble(*(text(*piece) if isinstance(piece, tuple) else text(piece) for piece in pieces))


class _Table(Table):
    """A table whose string cells are made visible (:func:`text`); a ``Text`` cell was built by the helpers."""

    def add_row(self, *renderables: Any, **options: Any) -> None:
        """Add a row; each string cell through :func:`text`."""
        super().add_row(*(text(cell) if isinstance(cell, str) else cell for cell in renderables), **options)


def table(out: Console, *columns: str, title: str | None = None) -> Table:
    """A table with ``columns``: box-drawing lines on a terminal, ASCII when piped; long cells wrap, never cut.

    The table has inner lines only (no outer frame): two columns and two rows more for the text.
    A string cell is made visible (:func:`text`).
    """
    shape = box.ROUNDED if out.is_terminal else box.ASCII
    drawn = _Table(*columns, title=title, box=shape, title_justify="left", expand=False, show_edge=False)
    for column in drawn.columns:
        column.overflow = "fold"
    return drawn


def styled(value: str) -> Text:
    """``value`` coloured by :data:`STATUS_STYLES` (a status or plugin state)."""
    return text(value, STATUS_STYLES.get(value, ""))


def field(out: Console, label: str, value: str) -> None:
    """Print ``label: value`` with the label in bold; both are plain text (not markup), made visible."""
    line = assemble((f"{label}: ", "bold"), value)
    out.print(line)


def items(out: Console, lines: list[str], *, marker: str = "-", indent: int = 2) -> None:
    """Print ``lines`` as a list: each after ``marker``, its continuation lines under its text."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in lines:
        grid.add_row(marker, text(line))
    out.print(Padding(grid, (0, 0, 0, indent)))


def columns(
    out: Console, rows: Sequence[tuple[str, ...]], *, indent: int = 2, styled_column: int | None = None
) -> None:
    """Print ``rows`` aligned in columns without a box; the last column wraps under itself.

    ``styled_column`` is coloured by :func:`styled` (a status or plugin state).
    """
    if not rows:
        return
    grid = Table.grid(padding=(0, 2, 0, 0))
    for _ in rows[0][:-1]:
        grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for row in rows:
        grid.add_row(*(styled(c) if i == styled_column else text(c) for i, c in enumerate(row)))
    out.print(Padding(grid, (0, 0, 0, indent)))


def with_hint(reason: str, hint: str | None) -> str:
    """``reason`` as a sentence, followed by ``Hint: ...`` when there is a hint."""
    return sentence(reason) + (f" {hint_sentence(hint)}" if hint else "")


def torch_failure(out: Console, torch: TorchImportReport | None) -> str | None:
    """Print why torch cannot load and the fixes, in order; returns the verdict reason (``None`` if torch loads)."""
    if torch is None or torch.loaded or torch.reason is None:
        return None
    out.print(Text("torch cannot load", style="bold red"))
    out.print(text(torch.reason))
    for number, fix in enumerate(torch.fixes, start=1):
        out.print(assemble((f"{number}. ", "bold"), fix))
    out.print()
    return torch.reason


def gib(num_bytes: int) -> str:
    """Bytes as GiB with one decimal (``"79.1 GiB"``)."""
    return f"{num_bytes / 2**30:.1f} GiB"


def yes_no(flag: bool) -> str:
    """``"yes"`` or ``"no"``."""
    return "yes" if flag else "no"


def write(text: str) -> None:
    """Write ``text`` to stdout as it is; when the reader of the pipe went away, nothing more is written.

    Raises ``OSError`` where stdout cannot take it (a full disk: ``> /dev/full``); nothing more is written there
    either, so that the command's error, on stderr, is the last word.
    """
    try:
        stream = stdout()
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        close_output(1)
    except OSError:
        close_output(1)
        raise


_JSON_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in CONTROL_CHARACTERS if ord(c) >= 0x7F})
"""The control characters JSON leaves raw (DEL, C1, the bidirectional marks), as JSON escapes."""


def json_text(document: str) -> str:
    r"""``document`` (JSON) with no control character raw: it reads back to the same value, and is safe to print.

    JSON escapes the C0 controls in its strings; the others of :data:`accelhal.text.CONTROL_CHARACTERS`
    become ``\uXXXX`` escapes here (outside strings JSON allows none of them).
    """
    return document.translate(_JSON_ESCAPES)


def print_json(model: BaseModel) -> None:
    r"""Write ``model`` as indented JSON to stdout (plain, never coloured; no control character raw).

    Text that holds undecodable bytes (``os.environ`` keeps each as a surrogate), or an output encoding
    that is not UTF-8 (``PYTHONIOENCODING=ascii``), gets the same document in ASCII: ``\udcff``, ``\u00e9``.
    """
    import json

    from pydantic_core import PydanticSerializationError

    try:
        document = json_text(model.model_dump_json(indent=2))
    except PydanticSerializationError:  # a surrogate: JSON can hold it only as an escape
        document = json.dumps(model.model_dump(mode="json"), indent=2)
    try:
        document.encode(getattr(stdout(), "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        document = json.dumps(json.loads(document), indent=2)
    write(document + "\n")


def error(message: str) -> None:
    """Print ``accelhal: error: message`` to stderr: one line when piped (no markup, no traceback)."""
    _line("accelhal: error: ", "bold red", message)


def refuse(message: str, document: BaseModel | None) -> int:
    """A user mistake: ``document`` (the command's own, under ``--json``) and the ``accelhal: error:`` line.

    Returns the exit status, :data:`~accelhal.cli.output.status.USAGE_ERROR`.
    """
    from accelhal.cli.output.status import USAGE_ERROR

    if document is not None:
        print_json(document)
    error(message)
    return USAGE_ERROR


def note(message: str) -> None:
    """Print ``accelhal: note: message`` to stderr, beside output meant for another program: one line when piped."""
    _line("accelhal: note: ", "bold yellow", message)


def _line(label: str, style: str, message: str) -> None:
    """``label`` then ``message`` on stderr: one line whatever its length when piped, wrapped at words on a terminal."""
    err = console(stderr=True)
    err.print(assemble((label, style), message), soft_wrap=not err.is_terminal)


class VisibleFormatter(logging.Formatter):
    """A log formatter whose message is made visible (:func:`accelhal.text.visible`): it may quote a plugin's words."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        """The record's line, its control characters made visible."""
        return visible(super().formatMessage(record))
