"""Text helpers shared by every layer (this module imports nothing of accelhal's).

Messages echo what they were given (a variable's value, an argument's ``repr``), and a
value may be huge: a 10,000-character ``ACCELHAL_ACCELERATOR``, a tensor's ``repr``.
:func:`shorten` keeps a message to a readable length and says how much it left out.

Example::

    >>> shorten("x" * 100, limit=10)
    'xxxxxxxxxx... (90 more characters)'
"""

from __future__ import annotations

SHORTEN_LIMIT = 80
"""The default number of characters :func:`shorten` keeps."""


MISSING_MEMBERS = "missing abstract members"
"""How a class check names the contract members a class lacks (``missing abstract members: a, b``)."""


def shorten(text: str, limit: int = SHORTEN_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, followed by the number of characters left out."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


MAX_DIGITS = 18
"""The most digits accelhal reads as a number from text, such as a variable, a string argument or a host list.

An int64 holds them; a longer number is refused before ``int()`` reads it, and Python itself refuses 4,301 digits."""

PRINTABLE_INT_BITS = 1_000
"""The most bits of an int that a message prints, about 300 digits; a larger one is quoted by its size.

Python refuses to print an int of 4,301 digits or more."""


def quote(value: object, limit: int = SHORTEN_LIMIT) -> str:
    """``repr(value)``, shortened: how a message quotes a value it was given; a huge int by its number of digits."""
    if isinstance(value, int) and value.bit_length() > PRINTABLE_INT_BITS:
        return f"an int of about {value.bit_length() * 30103 // 100000} digits"
    return shorten(repr(value), limit)


def sentence(text: str, *, capital: bool = False) -> str:
    """``text`` stripped and ending as a sentence ends (a full stop is added when it has none).

    >>> sentence("libhccl.so: cannot open shared object file: No such file or directory")
    'libhccl.so: cannot open shared object file: No such file or directory.'
    >>> sentence("run npu-smi info", capital=True)
    'Run npu-smi info.'
    """
    text = text.strip()
    if capital:
        text = text[:1].upper() + text[1:]
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def hint_sentence(hint: str) -> str:
    """``"Hint: "`` and ``hint`` as a sentence with a capital letter (``"Hint: Run npu-smi info."``)."""
    return f"Hint: {sentence(hint, capital=True)}"
