"""``accelhal explain NAME`` names the real reason for each way a backend can lose."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_accelhal
from tests.privateuse1.child import write_autoload_distribution
from tests.torch_features import VERSION, lacks_torch_accelerator, reports_no_accelerator

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
    assert {"staged_missing", "staged_low", "cpu"} <= set(known)


def test_a_device_whose_vendor_torch_autoload_was_told_not_to_load(tmp_path: Path) -> None:
    """A real ``torch.backends`` entry point (the test device's) with torch's device autoload off."""
    write_autoload_distribution(tmp_path, "testdev")
    env = {"PYTHONPATH": str(tmp_path), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    data = run_accelhal("explain", "testdev", "--json", env=env).json()
    assert data["outcome"] == "unknown"
    assert "torch's device autoload is off (TORCH_DEVICE_BACKEND_AUTOLOAD=0)" in data["summary"]
    entry_point = "testdev = tests.privateuse1.device:autoload (accelhal-testdev 1.0)"
    assert f"torch.backends entry points not loaded: {entry_point}" in data["details"]
    assert "install the distribution" not in data["hint"]
    assert "import the package before accelhal selects a backend" in data["hint"]
    assert "or unset TORCH_DEVICE_BACKEND_AUTOLOAD" in data["hint"]
    human = run_accelhal("explain", "testdev", env=env)
    assert human.returncode == 2 and "Traceback" not in human.output
    assert "hint: If 'testdev' is the device of a vendor package named above" in " ".join(human.stdout.split())


NO_GENERIC = (
    "no device torch.accelerator reports is left to the generic backend: torch reports no accelerator "
    "(torch.accelerator.current_accelerator() is None)"
)
"""Selection's reason for ``ACCELHAL_ACCELERATOR=generic`` on a machine without an accelerator (this one)."""


@reports_no_accelerator  # before 2.6: too old (the test below)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_generic_without_an_accelerator_says_why_as_selection_does(as_json: bool) -> None:
    result = run_accelhal("explain", " Generic", *(["--json"] if as_json else []))
    assert result.returncode == 0, result.output  # not a user mistake: the alias is known, nothing is left to it
    if as_json:
        data = result.json()
        assert (data["name"], data["alias"], data["outcome"], data["active"]) == (
            "generic",
            "generic",
            "no-device",
            "cpu",
        )
        assert data["summary"] == f"{NO_GENERIC}."
        assert data["hint"].startswith("install the device's torch package")
    else:
        text = " ".join(result.stdout.split())
        assert text.startswith(f"generic: no-device why: {NO_GENERIC}. - 'generic' stands for the backend the generic")
        assert "hint: Install the device's torch package" in text and "Traceback" not in result.output
    selection = run_accelhal("explain", "--json", env={"ACCELHAL_ACCELERATOR": "generic"}).json()
    assert NO_GENERIC in selection["summary"]  # the same words as selection's error


@lacks_torch_accelerator
def test_generic_on_a_torch_without_torch_accelerator_says_it_is_too_old() -> None:
    data = run_accelhal("explain", "generic", "--json").json()
    assert (data["outcome"], data["alias"]) == ("broken", "generic")
    assert data["summary"] == (
        f"the generic backend needs torch 2.10 or later, and this torch {VERSION} is too old: it has no "
        "torch.accelerator."
    )
    assert data["hint"].startswith("upgrade torch to 2.10 or later, or ask for the device's named backend")


def test_generic_with_its_plugin_blocked_says_so() -> None:
    data = run_accelhal("explain", "generic", "--json", env={"ACCELHAL_BLOCK_PLUGINS": "generic"}).json()
    assert (data["outcome"], data["alias"]) == ("blocked", "generic")
    assert data["summary"].endswith("the generic plugin is not loaded (blocked: listed in ACCELHAL_BLOCK_PLUGINS).")
