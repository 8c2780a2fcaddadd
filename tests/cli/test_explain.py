"""``accelhal explain NAME`` names the real reason for each way a backend can lose."""

from __future__ import annotations

import pytest

CASES = {
    "staged_missing": ("not-installed", "accelhal_no_such_module"),
    "staged_nodev": ("no-device", "runtime sees no device"),
    "staged_raises": ("probe-error", "RuntimeError: staged probe failure"),
    "staged_low": ("lower-priority", "'cpu' has a higher priority (100 > 50)"),
    "cpu": ("active", "chosen by rule 'fallback'"),
}


@pytest.mark.parametrize("name", CASES)
def test_explain_says_why(staged, name: str) -> None:
    outcome, evidence = CASES[name]
    result = staged("explain", name, "--json")
    assert result.returncode == 0, result.output
    data = result.json()
    assert data["outcome"] == outcome
    assert evidence in data["summary"] + " ".join(data["details"])
    human = staged("explain", name)
    assert f"{name}: {outcome}" in human.stdout
    assert "Traceback" not in human.output


def test_blocked_plugin(staged) -> None:
    data = staged("explain", "staged_blockme", "--json", env={"ACCELHAL_BLOCK_PLUGINS": "staged_blockme"}).json()
    assert data["outcome"] == "blocked"
    assert "ACCELHAL_BLOCK_PLUGINS" in " ".join(data["details"])


def test_plugin_that_failed_to_import(staged) -> None:
    data = staged("explain", "staged_broken", "--json").json()
    assert data["outcome"] == "plugin-failed"
    assert "cannot be imported" in " ".join(data["details"])


def test_not_probed_when_an_override_chose_another(staged) -> None:
    data = staged("explain", "staged_nodev", "--json", env={"ACCELHAL_ACCELERATOR": "cpu"}).json()
    assert data["outcome"] == "not-probed"
    assert "ACCELHAL_ACCELERATOR" in data["summary"]


def test_unknown_name_lists_the_known_ones(staged) -> None:
    result = staged("explain", "TPU ")
    assert result.returncode == 2
    assert "tpu: unknown" in result.stdout
    known = staged("explain", "tpu", "--json").json()["known"]
    assert known[0] == "staged_missing" and "cpu" in known and "staged_low" in known
