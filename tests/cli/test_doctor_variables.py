"""doctor checks every variable it documents, those that selection does not read among them."""

from __future__ import annotations

import pytest

from tests.cli.conftest import run_accelhal
from tests.cli.test_doctor import problems


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ACCELHAL_DIST_TIMEOUT", "nan"),
        ("ACCELHAL_OPS_LOCK_TIMEOUT", "-1"),
        ("ACCELHAL_OPS_LOCK_STALE", "1e300"),
        ("ACCELHAL_VLLM_PLATFORM", "bogus"),
        ("ACCELHAL_DEEPSPEED", "maybe"),
        ("ACCELHAL_DEEPSPEED_DISABLE_OPS", "cpu_adam,,"),
    ],
)
def test_a_bad_value_of_a_variable_selection_does_not_read_is_a_problem(variable: str, value: str) -> None:
    result = run_accelhal("doctor", "--json", env={variable: value, "ACCELHAL_ACCELERATOR": "cpu"})
    assert result.returncode == 1, result.output
    found = problems(result)
    assert variable in found["bad-variable"]["title"] and repr(value) in found["bad-variable"]["detail"]


@pytest.mark.parametrize("variable", ["ACCELHAL_BLOCK_PLUGINS", "ACCELHAL_PLUGINS"])
def test_a_plugin_list_naming_no_installed_plugin_is_a_warning(variable: str) -> None:
    result = run_accelhal("doctor", "--json", env={variable: "cuda,cdua", "ACCELHAL_ACCELERATOR": "cpu"})
    assert result.returncode == 0, result.output  # a warning: healthy
    found = problems(result)["plugin-list-unmatched"]
    assert found["severity"] == "warning"
    assert f"{variable} names 'cdua'" in found["title"] and "cuda" in found["detail"]
    human = run_accelhal("doctor", env={variable: "cuda,cdua", "ACCELHAL_ACCELERATOR": "cpu"})
    assert "No problems found (1 warning)" in human.stdout, human.output


@pytest.mark.parametrize("listed", ["cuda", "accelhal", "ACCELHAL", "CUDA,xpu"])
def test_a_plugin_list_naming_plugins_or_their_distribution_is_no_finding(listed: str) -> None:
    result = run_accelhal("doctor", "--json", env={"ACCELHAL_BLOCK_PLUGINS": listed, "ACCELHAL_ACCELERATOR": "cpu"})
    assert "plugin-list-unmatched" not in problems(result), result.output
