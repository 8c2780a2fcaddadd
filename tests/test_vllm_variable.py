"""``ACCELHAL_VLLM_PLATFORM`` as a user spells it: ``auto``, ``on``, ``off`` and accelhal's boolean spellings.

Read without vLLM (the bridge's probe reads it before vLLM builds anything); the vLLM session checks
that vLLM itself stops on a wrong value (``tests/compat/vllm/test_decision.py``).
"""

from __future__ import annotations

import pytest

from accelhal import ConfigurationError
from accelhal.compat.vllm._decision import VARIABLE, mode


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[("", "auto"), ("  ", "auto"), ("AUTO", "auto")],
        *[("on", "on"), (" Yes ", "on"), ("1", "on"), ("TRUE", "on")],
        *[("off", "off"), ("0", "off"), ("No", "off"), ("false", "off")],
    ],
)
def test_each_spelling_means_one_mode(raw: str, expected: str) -> None:
    assert mode({VARIABLE: raw}) == expected


def test_unset_is_auto() -> None:
    assert mode({}) == "auto"


@pytest.mark.parametrize("raw", ["maybe", "on;", "2", "o n", "enabled"])
def test_any_other_value_is_refused_naming_it_and_what_would_do(raw: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        mode({VARIABLE: raw})
    said = str(refused.value)
    assert f"{VARIABLE}={raw.strip().lower()!r} is not one of auto, on, off" in said
    assert "1/true/yes/on or 0/false/no/off" in said
