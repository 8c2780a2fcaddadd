"""The rows of an engine bridge's member table: :class:`Answer`, and the table as Markdown.

Each bridge declares one table, member of the engine's platform class -> :class:`Answer`
(``accelhal.compat.vllm.MEMBERS``, ``accelhal.compat.sglang.MEMBERS``). An answer's source is
one of:

- ``contract``: the active backend's :class:`accelhal.Accelerator` member named in ``by``;
- ``spec``: the backend's :class:`accelhal.BackendSpec` field named in ``by``;
- ``kit``: the field named in ``by`` of the kit a plugin's hook returns (``VllmKit``, ``SglangKit``);
  where the kit leaves it empty, the engine's portable path;
- ``portable``: the engine's portable path (its host platform's member, or the bridge's host answer);
- ``vllm`` / ``sglang``: the engine's own default, which reads only other members or is the same
  for every device.
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
