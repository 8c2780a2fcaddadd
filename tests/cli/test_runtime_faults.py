"""A device whose runtime raises never ends a command with a traceback: each command says which device, call and error.

The device is the test tree's real out-of-tree PrivateUse1 device (``tests/privateuse1``), loaded
under the name ``faildev`` with a device module whose ``device_count()`` raises ``RuntimeError``, as a
driver that fails to enumerate its devices does. torch reaches it as it reaches any out-of-tree
device: ``torch.accelerator.device_count()`` and ``is_available()`` delegate to the device module.
Each command runs in a child forked from the warm interpreter (:mod:`tests.warm`) that loads the device
first, then runs ``python -m accelhal``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.privateuse1 import device
from tests.privateuse1.child import build_in_child
from tests.simulation import ROOT
from tests.torch_features import needs_generic_backend

pytestmark = [pytest.mark.privateuse1, needs_generic_backend]

ERROR = "faildev driver: cannot enumerate devices (error 100)"

LOAD = """
import runpy, sys, types
from tests.privateuse1 import device, runtime

module = types.ModuleType("faildev_runtime")
module.__dict__.update({{name: getattr(runtime, name) for name in runtime.__all__}})

def device_count():
    raise RuntimeError({error!r})

module.device_count = device_count
module.is_available = lambda: device_count() > 0
{more}
device.load({name!r}, module=module)
runpy.run_module("accelhal", run_name="__main__", alter_sys=True)
"""
"""The child's program: load the device with a device module that raises, then ``python -m accelhal ARGS``."""


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    """The test device's library, built once (cached between runs), before a child loads it."""
    reason = device.unsupported()
    if reason is not None:
        pytest.skip(reason)
    build_in_child()


def on_device(*args: str, name: str = "faildev", more: str = "", **env: str) -> Result:
    """``python -m accelhal ARGS`` in a process where the device is loaded as ``name``."""
    code = LOAD.format(error=ERROR, more=more, name=name)
    return run_accelhal(*args, code=code, code_after_torch=True, env={"PYTHONPATH": str(ROOT), **env})


COMMANDS: dict[tuple[str, ...], int | None] = {
    ("info",): 0,
    ("list",): 0,
    ("explain",): 0,
    ("explain", "faildev"): 0,
    ("schema",): 0,
    ("ray-resources",): None,  # as without the device: 0, or 2 where Ray is not installed (the core suite)
    ("check", "faildev"): 2,
}
"""Each command but doctor (the next test), and its exit status with the failing device: the same as without it."""

BROKEN = f"torch.accelerator.device_count() failed: RuntimeError: {ERROR}"
"""The generic backend's verdict on the device."""

HINT = (
    "driver or runtime failed to enumerate its devices: check the vendor's driver and run the vendor's own "
    "device-listing tool"
)
"""Its hint, after the device's name: what explain, check and doctor say to do."""


def flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps at 80 columns


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_contains_the_fault(command: tuple[str, ...], as_json: bool) -> None:
    result = on_device(*command, *(["--json"] if as_json else []))
    expected = COMMANDS[command]
    if expected is None:
        expected = run_accelhal(*command, *(["--json"] if as_json else [])).returncode
    assert result.returncode == expected, result.output
    assert "Traceback" not in result.output, result.output
    if as_json:
        data: Any = result.json()  # one valid document
        assert isinstance(data, dict)
        text = json.dumps(data)
    else:
        text = flat(result.output.replace("|", " "))  # the list's table wraps the reason in its cell
    if command[0] in ("info", "list", "explain", "check"):
        assert BROKEN in flat(text.replace("\\n", " ")), text
    if command[0] == "check":
        assert "'faildev'" in text and "not available" in text
    if command[1:] == ("faildev",):  # explain and check name the backend: its hint says what to do
        assert f"faildev {HINT}" in flat(text), text


def test_doctor_names_the_device_the_call_and_the_exception_and_runs_every_check() -> None:
    result = on_device("doctor", "--json")
    assert result.returncode == 1 and "Traceback" not in result.output, result.output
    data = result.json()
    found = {p["code"]: p for p in data["problems"]}
    assert set(found) == {"backend-broken", "runtime-error"}, data["problems"]
    fault = found["runtime-error"]
    assert fault["title"] == "the 'faildev' runtime raises in torch.accelerator.is_available()"
    assert fault["detail"].startswith(f"RuntimeError: {ERROR}; the torch-accelerator check stopped there")
    assert fault["fix"].startswith("Repair the device's driver or runtime")
    assert found["backend-broken"]["detail"] == f"built-in: {BROKEN}."
    assert found["backend-broken"]["fix"] == f"The faildev {HINT}. Until then, ACCELHAL_BLOCK_PLUGINS=generic skips it."
    assert "torch-accelerator" in data["checks"] and "runtime-answers" in data["checks"] and data["active"] == "cpu"
    human = on_device("doctor")
    assert human.returncode == 1 and "Traceback" not in human.output, human.output
    assert "the 'faildev' runtime raises in torch.accelerator.is_available() [runtime-error]" in flat(human.stdout)
    assert "2 problems found." in human.stdout


NAMELESS = """
def get_device_name(index=None):
    raise RuntimeError("faildev driver: device name query failed")

module.device_count = runtime.device_count
module.is_available = runtime.is_available
module.get_device_name = get_device_name
"""
"""A device that counts its devices but cannot name them: it is chosen, and describing it raises."""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_info_says_what_the_active_backend_raised_while_it_was_described(as_json: bool) -> None:
    result = on_device("info", *(["--json"] if as_json else []), more=NAMELESS)
    assert result.returncode == 1, result.output
    assert "Traceback" not in result.output, result.output
    said = "the active backend 'faildev' cannot be described: device_description(0) raised RuntimeError: faildev "
    said += "driver: device name "
    assert said in flat(result.stderr)
    assert "get_name(device_index)" in flat(result.stderr)  # accelhal's call into the device module
    if as_json:
        data = result.json()
        assert data["accelerator"] is None and data["error"].startswith(said)
        assert data["detection"]["chosen"] == "faildev"


def test_a_generic_device_without_devices_gets_the_no_device_notice() -> None:
    code = "from tests.privateuse1 import device\ndevice.load('testdev')\nimport runpy\n"
    code += "runpy.run_module('accelhal', run_name='__main__', alter_sys=True)\n"
    env = {"PYTHONPATH": str(ROOT), device.DEVICES_VARIABLE: "0"}
    result = run_accelhal("doctor", code=code, code_after_torch=True, env=env)
    assert result.returncode == 0, result.output
    text = flat(result.stdout)
    assert "1. notice: torch's accelerator 'testdev' loads, but sees no testdev device [no-device]" in text
    assert "torch.accelerator.device_count() is 0" in text
    assert text.endswith("No problems found (1 notice).")
