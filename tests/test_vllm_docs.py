"""docs/vllm.md shows the bridge's member table as declared (``accelhal.compat.vllm._members``), without vLLM."""

from __future__ import annotations

from pathlib import Path

from accelhal.compat.vllm._members import markdown_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "vllm.md"
START = "<!-- members-table: generated from accelhal.compat.vllm._members.markdown_table(); tests/test_vllm_docs.py -->"
END = "<!-- end members-table -->"


def test_the_page_shows_the_declared_member_table() -> None:
    text = PAGE.read_text()
    shown = text[text.index(START) + len(START) : text.index(END)].strip("\n") + "\n"
    assert shown == markdown_table(), "docs/vllm.md's member table differs: run python -m tests.test_vllm_docs"


def main() -> None:
    """Rewrite the page's member table from the declaration."""
    text = PAGE.read_text()
    head, rest = text.split(START)
    _, tail = rest.split(END)
    PAGE.write_text(f"{head}{START}\n{markdown_table()}{END}{tail}")


if __name__ == "__main__":
    main()
