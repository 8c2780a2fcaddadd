"""Text helpers shared by every layer (this module imports nothing of accelhal's).

Importing it makes accelhal's own loggers (:data:`LOGGERS`) show a plugin's words as text
(:class:`VisibleMessages`). :func:`shorten` keeps a message that echoes a huge value (a 10,000-character
``ACCELHAL_ACCELERATOR``, a tensor's ``repr``) to a readable length and says how much it left out:
``shorten("x" * 100, limit=10)`` is ``'xxxxxxxxxx... (90 more characters)'``.
"""

from __future__ import annotations

import logging

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


def undecodable_escaped(text: str) -> str:
    r"""``text`` with each byte that was not UTF-8 written as ``\xNN``: an environment variable's value, shown.

    Python keeps such a byte as a lone surrogate (``os.environ`` decodes with ``surrogateescape``), which no
    UTF-8 output and no JSON document can hold as it is.

    >>> undecodable_escaped("caf\udce9")
    'caf\\xe9'
    """
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_FORMAT_CONTROLS = (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Characters that are not control characters to Unicode but move or break text on a terminal: the marks and
overrides of bidirectional text (which reorder what follows) and the line and paragraph separators."""
CONTROL_CHARACTERS = frozenset(chr(code) for code in (*range(0x20), *range(0x7F, 0xA0), *_FORMAT_CONTROLS))
"""What :func:`visible` writes as an escape: C0 (newline included), DEL, C1, and :data:`_FORMAT_CONTROLS`."""
_VISIBLE = str.maketrans(
    {
        character: _ESCAPES.get(character)
        or (f"\\x{ord(character):02x}" if ord(character) < 0x100 else f"\\u{ord(character):04x}")
        for character in CONTROL_CHARACTERS
    }
)


def visible(text: str) -> str:
    r"""``text`` with each control character written as its escape: how accelhal shows words it did not write.

    A probe's reason, a description, a hint, a driver's error or a plugin's output may hold
    escape codes (a window title, a clear screen) or a newline that forges a line of the
    command's own (``active backend: cuda``). Shown through this, they are text: ``\x1b``,
    ``\n``, ``\u202e``. A backslash is left as it is.

    >>> visible("no device\x1b[2J\r\nactive backend: cuda")
    'no device\\x1b[2J\\r\\nactive backend: cuda'
    """
    return text.translate(_VISIBLE)


LOGGERS = ("accelhal", "accelhal.compat.vllm", "accelhal.discovery", "accelhal.distributed", "accelhal.ops")
"""The loggers accelhal writes to; each shows its messages through :func:`visible` (:class:`VisibleMessages`)."""


class VisibleMessages(logging.Filter):
    """A filter that makes a log record's message visible: a program's own handler then prints it as text.

    accelhal's warnings quote a plugin's words (an op builder's reason, a backend's verdict);
    a program that configures logging prints them with its own handler and format.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the message by its visible form where it holds a control character; keep every record."""
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: logging reports it itself
            return True
        shown = visible(message)
        if shown != message:
            record.msg, record.args = shown, None
        return True


_VISIBLE_MESSAGES = VisibleMessages()
for _name in LOGGERS:
    logging.getLogger(_name).addFilter(_VISIBLE_MESSAGES)
