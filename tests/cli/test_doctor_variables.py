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


BELOW_THE_LEAST = {
    "ACCELHAL_TIMEOUT": ("0.5", "1"),
    "ACCELHAL_DOCTOR_TIMEOUT": ("0.001", "1"),
    "ACCELHAL_SLOW_PLUGIN_SECONDS": ("0.01", "0.1"),
    "ACCELHAL_HANG_WARNING_SECONDS": ("0.1", "0.5"),
    "ACCELHAL_DIST_TIMEOUT": ("0.0001", "1"),
    "ACCELHAL_OPS_LOCK_TIMEOUT": ("0.5", "1"),
}
"""A value below the least each seconds variable takes, and that least (``ACCELHAL_OPS_LOCK_STALE``: in ops' tests)."""


def test_each_seconds_variable_below_its_least_value_is_one_problem_naming_the_least() -> None:
    env = {variable: value for variable, (value, _) in BELOW_THE_LEAST.items()}
    result = run_accelhal("doctor", "--json", env={**env, "ACCELHAL_ACCELERATOR": "cpu"})
    assert result.returncode == 1, result.output
    details = [problem["detail"] for problem in result.json()["problems"] if problem["code"] == "bad-variable"]
    for variable, (value, least) in BELOW_THE_LEAST.items():
        said = f"{variable}='{value}' is not a number of seconds from {least} to 1000000"
        assert sum(said in detail for detail in details) == 1, (said, details)


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


BAD_SELECTION = {
    "ACCELHAL_ACCELERATOR": "bad name!",
    "ACCELHAL_PLUGINS": ",,",
    "ACCELHAL_STRICT": "maybe",
    "ACCELHAL_HANG_WARNING_SECONDS": "abc",
    "ACCELHAL_OPS_LOCK_TIMEOUT": "-1",
    "ACCELHAL_OPS_LOCK_STALE": "1e300",
}
"""Bad values of variables selection reads, and two of one reader beyond it (the op builders'), as they are read."""


def test_each_bad_variable_is_its_own_finding_and_discovery_refusing_them_is_no_crash() -> None:
    result = run_accelhal("doctor", "--json", env=BAD_SELECTION)
    assert result.returncode == 1, result.output
    found = result.json()["problems"]
    assert [problem["code"] for problem in found] == ["bad-variable"] * len(BAD_SELECTION), found
    for (variable, value), problem in zip(BAD_SELECTION.items(), found, strict=True):
        assert problem["title"] == f"{variable} has an invalid value", found
        assert f"{variable}={value!r}" in problem["detail"], found
