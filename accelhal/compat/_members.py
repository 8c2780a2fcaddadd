"""The rows of an engine bridge's member table: :class:`Answer`, and the table as Markdown.

Each bridge declares one table, member of the engine's platform class -> :class:`Answer`
(``accelhal.compat.vllm.MEMBERS``, ``accelhal.compat.sglang.MEMBERS``). An answer's source is
``contract``, ``spec``, ``kit``, ``portable``, or the engine's own default (``vllm``,
``sglang``); what each means: ``docs/vllm.md``, "Which fact answers each member".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Source = Literal["contract", "spec", "kit", "portable", "vllm", "sglang"]


@dataclass(frozen=True)
class Answer:
    """Where a bridge takes one member of the engine's platform from."""

    source: Source
    by: str = ""
    """The contract member, spec field or kit field (empty for ``portable`` and the engine's own)."""
    note: str = ""


def contract(by: str, note: str = "") -> Answer:
    """The row of a member answered by the contract's ``by``."""
    return Answer("contract", by, note)


def spec(by: str, note: str = "") -> Answer:
    """The row of a member answered by the spec's field ``by``."""
    return Answer("spec", by, note)


def kit(by: str, note: str = "") -> Answer:
    """The row of a member answered by the kit's field ``by``, else the portable path."""
    return Answer("kit", by, note)


def markdown_table(members: Mapping[str, Answer], header: str, words: Mapping[str, str]) -> str:
    """``members`` as a Markdown table; ``words`` says each source (``{by}`` stands for the row's ``by``)."""
    lines = [f"| {header} | answered by | note |", "|---|---|---|"]
    for member, answer in members.items():
        lines.append(f"| `{member}` | {words[answer.source].format(by=answer.by)} | {answer.note} |")
    return "\n".join(lines) + "\n"
