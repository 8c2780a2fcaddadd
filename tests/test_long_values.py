"""A huge value is shortened in every message that quotes it (the variable still names it)."""

from __future__ import annotations

import pytest

import accelhal
from accelhal.process.settings import Settings
from accelhal.text import quote, shorten
from tests.cli.conftest import run_accelhal

HUGE = "a" * 10_000


def test_shorten_says_how_much_it_left_out() -> None:
    assert shorten("abc") == "abc"
    assert shorten("x" * 100, limit=10) == "xxxxxxxxxx... (90 more characters)"
    assert quote("y" * 200).startswith("'yyy") and quote("y" * 200).endswith("(122 more characters)")


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("ACCELHAL_ACCELERATOR", HUGE, "is 10000 characters long"),
        ("ACCELHAL_ACCELERATOR", "cu;da" * 2_000, "contains ';'"),
        ("DS_ACCELERATOR", "é" * 10_000, "contains 'é'"),
        ("ACCELHAL_STRICT", HUGE, "is not a boolean"),
        ("ACCELHAL_BLOCK_PLUGINS", "," * 10_000, "has an empty entry"),
    ],
)
def test_a_huge_variable_is_shortened_in_the_error(variable: str, value: str, says: str) -> None:
    with pytest.raises(accelhal.ConfigurationError) as info:
        Settings.from_environ({variable: value})
    message = str(info.value)
    assert len(message) < 400 and variable in message and says in message
    assert "more characters" in message
    assert info.value.value == value  # the attribute keeps the whole value


def test_the_command_prints_one_short_error_line() -> None:
    result = run_accelhal("info", env={"ACCELHAL_ACCELERATOR": HUGE})
    assert result.returncode == 2
    assert len(result.stderr) < 500 and "more characters" in result.stderr  # was 129 lines
