"""Drawing for the ``accelhal`` command: consoles, tables, colours and JSON.

Everything is drawn with rich. On a terminal tables get rounded boxes and colour; when
the output is piped (or ``NO_COLOR`` is set, which rich honours) it degrades to plain
text with ASCII boxes, so a bug report can paste it as it is. Tables are sized for an
80-column terminal: long cells wrap instead of widening the table.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from accelhal.errors import hint_sentence, sentence
from accelhal.report import TorchImportReport
from accelhal.spec import Status

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


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr), at most :data:`MAX_WIDTH` columns wide."""
    out = Console(stderr=stderr, highlight=False)
    if out.width > MAX_WIDTH:
        out.width = MAX_WIDTH
    return out


def table(out: Console, *columns: str, title: str | None = None) -> Table:
    """A table with ``columns``: rounded on a terminal, ASCII when piped; long cells wrap, never cut."""
    shape = box.ROUNDED if out.is_terminal else box.ASCII
    drawn = Table(*columns, title=title, box=shape, title_justify="left", expand=False)
    for column in drawn.columns:
        column.overflow = "fold"
    return drawn


def styled(value: str) -> Text:
    """``value`` coloured by :data:`STATUS_STYLES` (a status or plugin state)."""
    return Text(value, style=STATUS_STYLES.get(value, ""))


def field(out: Console, label: str, value: str) -> None:
    """Print ``label: value`` with the label in bold; ``value`` is plain text, not markup."""
    line = Text.assemble((f"{label}: ", "bold"), value)
    out.print(line)


def with_hint(reason: str, hint: str | None) -> str:
    """``reason`` as a sentence, followed by ``Hint: ...`` when there is a hint."""
    return sentence(reason) + (f" {hint_sentence(hint)}" if hint else "")


def torch_failure(out: Console, torch: TorchImportReport | None) -> str | None:
    """Print why torch cannot load and the fixes, in order; returns the verdict reason (``None`` if torch loads)."""
    if torch is None or torch.loaded or torch.reason is None:
        return None
    out.print(Text("torch cannot load", style="bold red"))
    out.print(Text(torch.reason))
    for number, fix in enumerate(torch.fixes, start=1):
        out.print(Text.assemble((f"{number}. ", "bold"), fix))
    out.print()
    return torch.reason


def gib(num_bytes: int) -> str:
    """Bytes as GiB with one decimal (``"79.1 GiB"``)."""
    return f"{num_bytes / 2**30:.1f} GiB"


def yes_no(flag: bool) -> str:
    """``"yes"`` or ``"no"``."""
    return "yes" if flag else "no"


def print_json(model: BaseModel) -> None:
    """Write ``model`` as indented JSON to stdout (plain, never coloured)."""
    sys.stdout.write(model.model_dump_json(indent=2) + "\n")


def error(message: str) -> None:
    """Print ``accelhal: error: message`` to stderr (no markup, no traceback)."""
    err = console(stderr=True)
    err.print(Text.assemble(("accelhal: error: ", "bold red"), message))
