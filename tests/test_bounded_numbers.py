"""Every number a user or a plugin gives is bounded before use: a clear error naming it, never an overflow."""

from __future__ import annotations

import json
import tracemalloc

import pytest

import accelhal
from accelhal.contract.spec import PRIORITY_LIMIT
from accelhal.errors import ConfigurationError, DistributedSetupError
from accelhal.launch.environment import read_launch_env
from accelhal.launch.hostlist import expand_hostlist
from accelhal.process.settings import MAX_SECONDS
from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

TOO_LONG = ["1e10", "1e300", str(MAX_SECONDS * 2)]
"""Numbers of seconds past :data:`MAX_SECONDS`, up to what no clock or C int holds."""


@pytest.mark.parametrize(
    ("command", "value"), [*(("info", value) for value in [*TOO_LONG, "0.5", "0.001"]), ("doctor", "0.5")]
)
def test_a_timeout_out_of_its_range_is_a_usage_error_naming_it(command: str, value: str) -> None:
    """The least is ``ACCELHAL_TIMEOUT``'s, the variable that is its default (doctor's discovery child takes it too)."""
    result = run_accelhal(command, "--timeout", value)
    assert result.returncode == 2, result.output
    assert f"argument --timeout: '{value}' is not a number of seconds from 1 to 1000000" in result.stderr
    assert "Traceback" not in result.output and "OverflowError" not in result.output


@pytest.mark.parametrize("variable", ["ACCELHAL_TIMEOUT", "ACCELHAL_DOCTOR_TIMEOUT"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_command_refuses_a_variable_past_the_bound_naming_it(variable: str, json_flag: list[str]) -> None:
    result = run_accelhal("doctor", *json_flag, env={variable: "1e300"})
    assert result.returncode != 0, result.output
    assert f"{variable}='1e300'" in " ".join(result.output.split())
    assert "Traceback" not in result.output and "OverflowError" not in result.output
    if json_flag:
        json.loads(result.stdout)  # one document


@pytest.mark.parametrize("value", ["abc", "-1", "0.1", "1e300"])
def test_a_program_refuses_a_bad_hang_warning_as_it_refuses_any_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """The first ``get_accelerator()`` raises, on the caller's thread; the watchdog's thread never reads it alone."""
    monkeypatch.setenv("ACCELHAL_HANG_WARNING_SECONDS", value)
    with pytest.raises(ConfigurationError) as info:
        accelhal.get_accelerator()
    assert info.value.variable == "ACCELHAL_HANG_WARNING_SECONDS"
    said = f"ACCELHAL_HANG_WARNING_SECONDS='{value}' is not a number of seconds from 0.5 to 1000000 (for example 30)"
    assert said in str(info.value)


@pytest.mark.parametrize(
    ("variable", "value", "least"),
    [
        ("ACCELHAL_HANG_WARNING_SECONDS", "1e300", "0.5"),
        ("ACCELHAL_HANG_WARNING_SECONDS", "0.001", "0.5"),
        ("ACCELHAL_TIMEOUT", "0.5", "1"),
    ],
)
def test_a_command_refuses_a_seconds_variable_out_of_its_range_naming_it(variable: str, value: str, least: str) -> None:
    """The watchdog's thread would otherwise sleep(1e300) and die of an ``OverflowError``, or wake 1,000 times a s."""
    result = run_accelhal("info", env={variable: value, "ACCELHAL_ACCELERATOR": "cpu"})
    assert result.returncode == 2, result.output
    said = f"accelhal: error: {variable}='{value}' is not a number of seconds from {least} to 1000000"
    assert said in result.stderr, result.output
    assert "Traceback" not in result.output and "OverflowError" not in result.output


@pytest.mark.parametrize("priority", [str(PRIORITY_LIMIT + 1), str(-PRIORITY_LIMIT - 1), "10**5000"])
def test_a_priority_past_the_bound_makes_the_plugin_broken_not_the_program(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch, priority: str
) -> None:
    """``priority`` is the expression the plugin's source writes (an int of 5,001 digits has no literal here)."""
    source = backend_plugin("acmehuge", priority=1).replace("priority=1,", f"priority={priority},")
    site = install_distribution("acme-huge", {"acme_huge": source}, {"acmehuge": "acme_huge"}).parent
    monkeypatch.delenv("ACCELHAL_ACCELERATOR", raising=False)
    assert accelhal.get_accelerator().name != "acmehuge"
    listed = run_accelhal("list", "--json", env={"PYTHONPATH": str(site)})
    document = json.loads(listed.stdout)  # one document, which Python's json reads
    said = json.dumps(document)
    assert "acmehuge" in said and f"priority must be an int between -{PRIORITY_LIMIT} and {PRIORITY_LIMIT}" in said
    assert "Traceback" not in listed.output
    if priority == "10**5000":
        assert "an int of about 5000 digits" in said


HUGE_NUMBER = "9" * 5_000
"""More digits than Python's ``int()`` reads from a string (4,300)."""


@pytest.mark.parametrize("variable", ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"])
def test_a_launcher_number_past_the_bound_is_refused_naming_it(variable: str) -> None:
    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "MASTER_PORT": "29500"}
    env[variable] = HUGE_NUMBER
    with pytest.raises(DistributedSetupError) as info:
        read_launch_env(env)
    assert info.value.variable == variable
    assert "(4922 more characters)" in str(info.value) and len(str(info.value)) < 400


@pytest.mark.parametrize("counts", ["1(x300000000)", "1(x300000000),2", f"1(x{'9' * 18})"])
def test_slurm_task_counts_are_read_for_this_node_without_expanding_them(counts: str) -> None:
    """Each count is read where it stands: expanded, the first two were lists of 300 million ints (2.4 GB)."""
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "0", "SLURM_NNODES": "1"}
    env |= {"SLURM_STEP_TASKS_PER_NODE": counts, "SLURM_NODEID": "299999999"}
    tracemalloc.start()
    try:
        assert read_launch_env(env).local_world_size == 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"reading the counts took {peak} bytes"  # expanded, they took 2.4 GB


def test_slurm_node_past_its_counts_is_named() -> None:
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "3", "SLURM_LOCALID": "0"}
    env |= {"SLURM_STEP_TASKS_PER_NODE": "1(x300000000),2", "SLURM_NODEID": "300000001"}
    with pytest.raises(DistributedSetupError, match="does not pick one of its 300000001 nodes"):
        read_launch_env(env)


@pytest.mark.parametrize("counts", [f"1(x{HUGE_NUMBER})", f"{HUGE_NUMBER}", "1(x0),2"])
def test_a_slurm_task_count_past_the_bound_is_refused_naming_it(counts: str) -> None:
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": counts}
    with pytest.raises(DistributedSetupError, match="Slurm's task count per node") as info:
        read_launch_env(env)
    assert info.value.variable == "SLURM_STEP_TASKS_PER_NODE" and len(str(info.value)) < 400


@pytest.mark.parametrize(
    ("hostlist", "words"),
    [
        ("n" + "[1]" * 3_000, "more than 16 bracketed ranges"),
        (f"node[{HUGE_NUMBER}]", "is not a number or a range N-M (numbers of at most 18 digits)"),
        (f"node[1-{HUGE_NUMBER}]", "is not a number or a range N-M"),
    ],
)
def test_a_host_list_past_the_bounds_is_refused_not_a_recursion_or_value_error(hostlist: str, words: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        expand_hostlist(hostlist)
    assert words in str(info.value) and len(str(info.value)) < 600


@pytest.mark.parametrize("index", ["9" * 5_000, 10**5_000], ids=["string", "int"])
def test_a_device_index_past_the_bound_is_an_error_naming_it(index: object) -> None:
    accelhal.set_accelerator("cpu")
    accelerator = accelhal.get_accelerator()
    with pytest.raises((TypeError, ValueError), match="device") as info:
        accelerator.memory_allocated(index)  # type: ignore[arg-type]
    assert len(str(info.value)) < 400


def test_a_seed_past_the_bound_is_an_error_naming_it() -> None:
    accelhal.set_accelerator("cpu")
    with pytest.raises(TypeError, match="manual_seed takes an int seed") as info:
        accelhal.get_accelerator().manual_seed("9" * 5_000)  # type: ignore[arg-type]
    assert len(str(info.value)) < 400
