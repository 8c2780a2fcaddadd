"""``ACCELHAL_VLLM_PLATFORM`` and ``ACCELHAL_SGLANG_PLATFORM`` as a user spells them: ``auto``, ``on``, ``off``
and accelhal's boolean spellings, one reader for both (``accelhal.compat._engines.mode``).

Read without the engines (each bridge's probe reads its variable before the engine builds anything);
the engines' sessions check that the engine itself stops on a wrong value
(``tests/compat/vllm/test_decision.py``, ``tests/compat/sglang/test_decision.py``).
"""

from __future__ import annotations

import pytest

from accelhal import ConfigurationError
from accelhal.compat import _engines
from accelhal.compat.sglang._decision import ENGINE as SGLANG
from accelhal.compat.vllm._decision import ENGINE as VLLM

BRIDGES = pytest.mark.parametrize("engine", [VLLM, SGLANG], ids=["vllm", "sglang"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[("", "auto"), ("  ", "auto"), ("AUTO", "auto")],
        *[("on", "on"), (" Yes ", "on"), ("1", "on"), ("TRUE", "on")],
        *[("off", "off"), ("0", "off"), ("No", "off"), ("false", "off")],
    ],
)
@BRIDGES
def test_each_spelling_means_one_mode(engine: _engines.Engine, raw: str, expected: str) -> None:
    assert _engines.mode(engine, {engine.variable: raw}) == expected


@BRIDGES
def test_unset_is_auto(engine: _engines.Engine) -> None:
    assert _engines.mode(engine, {}) == "auto"


@pytest.mark.parametrize("raw", ["maybe", "on;", "2", "o n", "enabled"])
@BRIDGES
def test_any_other_value_is_refused_naming_it_and_what_would_do(engine: _engines.Engine, raw: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        _engines.mode(engine, {engine.variable: raw})
    said = str(refused.value)
    assert f"{engine.variable}={raw.strip().lower()!r} is not one of auto, on, off" in said
    assert "1/true/yes/on or 0/false/no/off" in said


@BRIDGES
def test_the_refusal_quotes_the_value_as_given_and_shortened(engine: _engines.Engine) -> None:
    """Before, it quoted the value lower-cased (``'\\x1b[2j'`` for ``[2J``) and whole (10,000 characters)."""
    for given, shown in (("\x1b[2J", "'\\x1b[2J'"), ("Y" * 10_000, "... (9922 more characters)")):
        with pytest.raises(ConfigurationError) as refused:
            _engines.mode(engine, {engine.variable: given})
        said = str(refused.value)
        assert shown in said and len(said) < 300, said[:300]
