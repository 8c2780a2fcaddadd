"""docs/vllm.md and docs/sglang.md show their bridge's member table as declared, without the engines.

``python -m tests.test_engine_docs`` rewrites both tables from the declarations
(``accelhal.compat.vllm._members``, ``accelhal.compat.sglang._members``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from accelhal.compat.sglang._members import markdown_table as sglang_table
from accelhal.compat.vllm._members import markdown_table as vllm_table

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES: dict[str, Callable[[], str]] = {"vllm": vllm_table, "sglang": sglang_table}
END = "<!-- end members-table -->"


def start(engine: str) -> str:
    """The marker before the page's table."""
    return (
        f"<!-- members-table: generated from accelhal.compat.{engine}._members.markdown_table(); "
        "tests/test_engine_docs.py -->"
    )


@pytest.mark.parametrize("engine", list(PAGES))
def test_the_page_shows_the_declared_member_table(engine: str) -> None:
    text = (DOCS / f"{engine}.md").read_text()
    shown = text[text.index(start(engine)) + len(start(engine)) : text.index(END)].strip("\n") + "\n"
    assert shown == PAGES[engine](), f"docs/{engine}.md's member table differs: run python -m tests.test_engine_docs"


def main() -> None:
    """Rewrite each page's member table from the declaration."""
    for engine, table in PAGES.items():
        page = DOCS / f"{engine}.md"
        head, rest = page.read_text().split(start(engine))
        _, tail = rest.split(END)
        page.write_text(f"{head}{start(engine)}\n{table()}{END}{tail}")


if __name__ == "__main__":
    main()
