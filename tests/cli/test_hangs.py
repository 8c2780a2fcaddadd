"""A device runtime that never answers: every command names the backend, the call and the stack, and goes on.

The backend ``acmehang`` (priority 950, :mod:`tests.cli.launch`) counts its devices with a
``torch.acmehang.device_count()`` that hangs in Python, hangs in a C call that keeps the GIL,
or answers after a second. Each command runs with ``--timeout 2`` (text and ``--json``): a
hang is reported on stderr with the stack, the command goes on with the other backends and
keeps its exit status and its JSON document; a device that answers within the deadline is
still chosen. All the commands run at the same time, forked from one warm interpreter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.conftest import Result
from tests.cli.launch import RAY_COMMANDS, Launcher, install_hanging_plugin

pytestmark = pytest.mark.slow  # processes of their own for seconds each

COMMANDS = (
    ("info",),
    ("list",),
    ("explain",),
    ("explain", "acmehang"),
    ("doctor",),
    ("check", "acmehang"),
    *RAY_COMMANDS,
    ("schema", "info"),
)
HUNG = "accelhal: backend 'acmehang' (its probe) gave no answer within 2 s (--timeout); it is stuck in:"
REFUSED = "DeviceCallHungError: no answer within 2 s (--timeout), stuck in device_count ("
SKIP = "to skip it: ACCELHAL_BLOCK_PLUGINS=acmehang (or ACCELHAL_ACCELERATOR=cpu)"
EXIT_WHEN_HUNG = {"doctor": 1, "check": 2}
"""Exit statuses other than 0 with the hanging backend: doctor's finding, check's backend that cannot be used."""


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    started = Launcher(tmp_path_factory.mktemp("hangs"))
    yield started
    started.close()


@pytest.fixture(scope="module")
def results(launcher: Launcher, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Result]:
    """Every command, text and ``--json``, with the hanging and with the slow runtime, run at the same time."""
    site = install_hanging_plugin(tmp_path_factory.mktemp("site") / "site-packages")
    runs = {
        (runtime, *command, *json_flag): [
            *command,
            *json_flag,
            "--timeout",
            "2" if runtime != "slow1" else "8",
            *(["--", "-k", "test_name_and_device_type"] if command[0] == "check" else []),
        ]
        for runtime in ("hang", "slow1")
        for command in COMMANDS
        for json_flag in ((), ("--json",))
    }
    runs[("gil", "info", "--json")] = ["info", "--json", "--timeout", "2"]
    for command in (("info",), ("doctor",), ("check", "acmehang", "--", "-k", "test_device_count")):
        for json_flag in ((), ("--json",)):
            runs[_key("later", command[:1], bool(json_flag))] = [
                *command[:2],
                *json_flag,
                "--timeout",
                "2",
                *command[2:],
            ]
    env = {"PYTHONPATH": site, "ACME_VISIBLE_DEVICES": "0"}  # doctor then counts the active backend's devices
    started = {key: launcher.start(*args, env={**env, "ACME_RUNTIME": key[0]}) for key, args in runs.items()}
    return {key: launcher.wait(command) for key, command in started.items()}


def _key(runtime: str, command: tuple[str, ...], json_output: bool) -> tuple[str, ...]:
    return (runtime, *command, *(["--json"] if json_output else []))


def _active(command: str, data: dict[str, Any]) -> str:
    """The backend in use, as the command's JSON names it."""
    if command == "info":
        return str(data["detection"]["chosen"])
    return str(data[{"list": "chosen", "explain": "active", "doctor": "active"}.get(command, "backend")])


def _said(result: Result) -> str:
    return " ".join(result.stderr.split())


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_hanging_runtime_is_named_and_the_command_goes_on(
    results: dict[tuple[str, ...], Result], command: tuple[str, ...], json_output: bool
) -> None:
    result = results[_key("hang", command, json_output)]
    assert result.returncode == EXIT_WHEN_HUNG.get(command[0], 0), result.output
    assert "Traceback" not in result.output
    data = result.json() if json_output else None
    if command[0] == "schema":
        assert HUNG not in result.stderr
        return
    if command[0] == "doctor":  # its discovery child runs the probe: the hang is a finding
        found = {p["code"]: p for p in data["problems"]} if data else {}
        text = json.dumps(found.get("plugin-hung")) if data else " ".join(result.stdout.split())
        assert "plugin 'acmehang' hangs while probing backend 'acmehang'" in text, result.output
        assert "export ACCELHAL_BLOCK_PLUGINS=acmehang" in text
        assert (data["active"] if data else result.stdout.split()[2]) == "cpu"
        return
    said = _said(result)
    assert HUNG in said and SKIP in said, said
    assert 'acme_hang.py", line' in said and "in device_count" in said  # the stack, innermost first
    if command[0] == "check":
        assert "acmehang" in said and REFUSED in said
        assert data is None or REFUSED in data["error"]
        return
    if command[0] == "list" and data is None:  # a table: the reason wraps within its cell
        assert "probe-error" in result.stdout and "DeviceCallHungError" in result.stdout
    elif command[0] == "ray-resources" and data is None:
        assert result.stdout == "{}\n"  # cpu's resources: none Ray does not count itself
    elif data is None:
        assert REFUSED in " ".join(result.stdout.split())
    elif command[0] == "info":
        assert data["detection"]["chosen"] == "cpu"
        [verdict] = [c for c in data["detection"]["candidates"] if c["name"] == "acmehang"]
        assert verdict["status"] == "probe-error" and REFUSED in verdict["reason"]
    elif command[0] == "ray-resources":
        assert data["backend"] == "cpu"
    else:
        assert REFUSED in json.dumps(data)


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_runtime_that_answers_late_is_still_chosen(
    results: dict[tuple[str, ...], Result], command: tuple[str, ...], json_output: bool
) -> None:
    result = results[_key("slow1", command, json_output)]
    assert result.returncode == 0, result.output
    assert "gave no answer" not in result.stderr
    if command[0] == "schema":
        return
    data = result.json() if json_output else None
    if data is not None:
        assert _active(command[0], data) == "acmehang", data
    elif command[0] != "ray-resources":  # (whose text is the resources alone)
        assert "acmehang" in result.stdout


def test_a_hang_that_holds_the_gil_is_bounded_too(results: dict[tuple[str, ...], Result]) -> None:
    result = results[("gil", "info", "--json")]
    assert result.returncode == 0, result.output
    assert HUNG in _said(result) and "in device_count" in result.stderr
    assert result.json()["detection"]["chosen"] == "cpu"


LATER = "backend 'acmehang' (AcmehangAccelerator.device_count()) gave no answer within 2 s (--timeout)"


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_a_call_after_the_probe_that_hangs_is_named_too(
    results: dict[tuple[str, ...], Result], json_output: bool
) -> None:
    """The probe answers, a later call hangs: info cannot describe the backend, doctor finds it, check fails it.

    Once ``device_count()`` hung, info's later calls into the runtime are refused at once: one timeout.
    """
    info, doctor, check = (results[_key("later", (name,), json_output)] for name in ("info", "doctor", "check"))
    assert info.returncode == 1, info.output
    said = _said(info)
    assert said.count("gave no answer within 2 s (--timeout); it is stuck in:") == 1, said
    assert "backend 'acmehang' (device_count()) gave no answer within 2 s" in said
    assert "the active backend 'acmehang' cannot be described: is_available() raised DeviceCallHungError" in said
    assert "not called: backend 'acmehang' (device_count()) gave no answer within 2 s" in said
    assert " in listen)" not in said  # the refusal says where the call was stuck, not where it was refused
    assert doctor.returncode == 1, doctor.output
    assert LATER in _said(doctor)
    found = json.dumps(doctor.json()["problems"]) if json_output else " ".join(doctor.stdout.split())
    assert "runtime-error" in found and "DeviceCallHungError: no answer within 2 s" in found, found
    assert check.returncode == 1, check.output
    assert "conformance test" in _said(check) and "gave no answer within 2 s" in _said(check)
    assert (check.json()["errors"] if json_output else 1) == 1, check.output
