"""Text for messages: values shortened so that an error stays readable whatever it quotes."""

from __future__ import annotations

LIMIT = 80
"""The longest quoted value a message shows whole."""


def shorten(text: str, limit: int = LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out.

    >>> shorten("x" * 100, 10)
    'xxxxxxxxxx... (90 more characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def quote(value: object, limit: int = LIMIT) -> str:
    """``repr(value)``, shortened."""
    return shorten(repr(value), limit)
