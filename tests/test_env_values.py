"""Every kind of ACCELHAL_ACCELERATOR value gets its specific answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accelhal
from accelhal.contract.spec import NAME_PATTERN
from accelhal.errors import ConfigurationError
from accelhal.process.settings import Settings, block_plugins_with, parse_bool, parse_count


@pytest.mark.parametrize("value", ["", " ", "\t", "\n", "   \t  "])
def test_empty_or_blank_means_unset(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", value)
    assert accelhal.get_accelerator().name == "cpu"
    assert accelhal.detect().rule == "fallback"


@pytest.mark.parametrize("value", ["cpu", "CPU", "Cpu", " cpu", "cpu ", "\tcpu\n", "  CpU  "])
def test_case_and_surrounding_blanks_are_accepted(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", value)
    assert accelhal.get_accelerator().name == "cpu"
    assert accelhal.detect().rule == "ACCELHAL_ACCELERATOR"


@pytest.mark.parametrize("value", ["tpu", "gpu", "cuda0", "cpux", "nvidia"])
def test_unknown_names_list_the_known_ones(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", value)
    with pytest.raises(accelhal.UnknownBackendError) as info:
        accelhal.get_accelerator()
    message = str(info.value)
    assert repr(value) in message and "ACCELHAL_ACCELERATOR" in message
    assert "known accelerators:" in message and "cpu" in info.value.known


@pytest.mark.parametrize(
    ("value", "shown"),
    [("cuda;", "';'"), ("cu da", "' '"), ("cuda,cpu", "','"), ("cpu\x00", "'\\x00'"), ("cpu:0", "':'"), ("ñpu", "'ñ'")],
)
def test_stray_characters_are_named(monkeypatch: pytest.MonkeyPatch, value: str, shown: str) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", value.replace("\x00", "\\x00") if "\x00" in value else value)
    if "\x00" in value:  # the environment cannot carry NUL; check the parser directly
        with pytest.raises(ConfigurationError, match="contains"):
            Settings.from_environ({"ACCELHAL_ACCELERATOR": value})
        return
    with pytest.raises(ConfigurationError, match="contains") as info:
        accelhal.get_accelerator()
    assert shown in str(info.value)
    assert not isinstance(info.value, accelhal.UnknownBackendError)
    assert info.value.variable == "ACCELHAL_ACCELERATOR"


def test_known_but_unavailable_gives_the_probe_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cuda")
    registered = "cuda" in accelhal.selection.registry().backends
    expected = accelhal.BackendUnavailableError if registered else accelhal.UnknownBackendError
    with pytest.raises(expected, match="'cuda'") as info:
        accelhal.get_accelerator()
    if registered:
        assert "requested by ACCELHAL_ACCELERATOR" in str(info.value)
        record = accelhal.detect().candidate("cuda")
        assert record is not None and record.reason in str(info.value)


def test_forced_unavailable_never_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "tpu")
    for _ in range(2):
        with pytest.raises(accelhal.AccelhalError):
            accelhal.get_accelerator()


@given(st.text(max_size=12))
@settings(max_examples=300, deadline=None)
def test_any_value_parses_to_a_valid_name_or_raises_configuration_error(value: str) -> None:
    try:
        parsed = Settings.from_environ({"ACCELHAL_ACCELERATOR": value}).accelerator
    except ConfigurationError as err:
        assert err.variable == "ACCELHAL_ACCELERATOR"
        return
    if parsed is None:
        assert not value.strip()
    else:
        assert NAME_PATTERN.fullmatch(parsed) and parsed == value.strip().lower()


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("TRUE", True), (" on ", True), ("0", False), ("", False)])
def test_booleans(raw: str, expected: bool) -> None:
    assert parse_bool("ACCELHAL_STRICT", raw) is expected


def test_bad_boolean_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_STRICT", "maybe")
    with pytest.raises(ConfigurationError, match="ACCELHAL_STRICT='maybe' is not a boolean"):
        accelhal.get_accelerator()


def test_empty_entry_in_a_plugin_list_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_PLUGINS", "a,,b")
    with pytest.raises(ConfigurationError, match="empty entry"):
        accelhal.get_accelerator()


@pytest.mark.parametrize(("raw", "expected"), [(None, 2), ("", 2), (" ", 2), ("0", 0), (" 3 ", 3), ("007", 7)])
def test_counts(raw: str | None, expected: int) -> None:
    assert parse_count("ACCELHAL_SIMULATED_DEVICES", raw, 2) == expected


@pytest.mark.parametrize("raw", ["two", "-1", "1.5", "+2", "2 3", "\u0661", "9" * 19])
def test_a_bad_count_names_the_variable_and_what_would_be_right(raw: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_count("ACCELHAL_SIMULATED_DEVICES", raw, 2)
    message = str(info.value)
    assert message.startswith("ACCELHAL_SIMULATED_DEVICES=") and "is not a count" in message
    assert "a whole number from 0 (for example 2)" in message


@pytest.mark.parametrize(
    ("raw", "names", "value"),
    [
        (None, ["acme"], "acme"),
        ("", ["acme", "acme"], "acme"),
        (" zeta ,, acme", ["acme", "beta"], "zeta,acme,beta"),
        ("Bad Name;", ["acme"], "Bad Name;,acme"),  # kept for the process that reads it to refuse, never raised here
    ],
)
def test_doctor_adds_to_the_users_block_list_without_judging_it(raw: str | None, names: list[str], value: str) -> None:
    assert block_plugins_with(raw, names) == value
