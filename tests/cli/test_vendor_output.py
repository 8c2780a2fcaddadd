"""Vendor output never corrupts ours: a plugin and its runtime that print to stdout at import.

The staged distribution writes to standard output in every way a vendor stack does:
Python's ``print``, ``os.write(1, ...)`` and C's ``printf`` (buffered by the C library
when stdout is a pipe). Every ``--json`` document still parses, the vendor's lines are
on stderr, and the report keeps them as the plugin's and the backend's output.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from tests.cli.conftest import Result, clean_env, run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

NOISY_RUNTIME = """
    import ctypes, os
    print("noisy runtime: print at import")
    os.write(1, b"noisy runtime: os.write at import\\n")
    ctypes.CDLL(None).printf(b"noisy runtime: printf at import\\n")
    DEVICES = int(os.environ.get("NOISY_DEVICES", "0"))
"""

NOISY_PLUGIN = """
    import os
    from accelhal import BackendSpec, Verdict, hookimpl

    print("noisy plugin: print at import")
    os.write(1, b"noisy plugin: os.write at import\\n")

    def probe():
        import noisy_runtime
        n = noisy_runtime.DEVICES
        return Verdict.available(f"{n} noisy device(s)") if n else Verdict.no_device("noisy_runtime sees 0 devices")

    @hookimpl
    def accelhal_register_backends(register):
        register(BackendSpec(name="noisy", device_type="cpu", priority=960, accelerator="noisy_accel:NoisyAccelerator",
                             probe=probe, requires=("noisy_runtime",), device_check_command="noisy-smi --list"))
"""

NOISY_ACCELERATOR = """
    import os
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    print("noisy accelerator: print at import")
    os.write(1, b"noisy accelerator: os.write at import\\n")

    class NoisyAccelerator(CpuAccelerator):
        _name = "noisy"
"""

RUNTIME_LINES = ("noisy runtime: print at import", "noisy runtime: os.write at import", "noisy runtime: printf")


@pytest.fixture
def noisy(install_distribution: Callable[..., Path]) -> Callable[..., Result]:
    """Run the command with the noisy vendor distribution installed."""
    modules = {"noisy_runtime": NOISY_RUNTIME, "noisy_plugin": NOISY_PLUGIN, "noisy_accel": NOISY_ACCELERATOR}
    site = str(install_distribution("noisy-vendor", modules, {"noisy": "noisy_plugin"}).parent)

    def run(*args: str, env: Mapping[str, str] | None = None) -> Result:
        return run_accelhal(*args, env={"PYTHONPATH": site, **(env or {})})

    return run


@pytest.mark.parametrize("args", [["info"], ["list"], ["explain", "noisy"], ["doctor"]], ids=" ".join)
def test_json_stays_valid_and_vendor_lines_go_to_stderr(noisy: Callable[..., Result], args: list[str]) -> None:
    result = noisy(*args, "--json")
    result.json()  # one valid document: the vendor's lines appear in it only as quoted strings
    assert not [line for line in result.stdout.splitlines() if line.startswith("noisy")]
    for line in (*RUNTIME_LINES, "noisy plugin: print at import", "noisy plugin: os.write at import"):
        assert line in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_report_keeps_each_output_with_its_plugin_and_backend(noisy: Callable[..., Result]) -> None:
    data = noisy("list", "--json").json()
    plugin = next(p for p in data["plugins"] if p["name"] == "noisy")
    assert "noisy plugin: print at import" in plugin["output"]
    assert "noisy plugin: os.write at import" in plugin["output"]
    backend = next(b for b in data["backends"] if b["name"] == "noisy")
    assert backend["status"] == "no-device"
    for line in RUNTIME_LINES:
        assert line in backend["import_output"]
    assert "noisy plugin" not in backend["import_output"]


def test_output_of_the_chosen_backends_class_is_kept_too(noisy: Callable[..., Result]) -> None:
    result = noisy("info", "--json", env={"NOISY_DEVICES": "1"})
    assert result.returncode == 0, result.output
    data = result.json()
    assert data["accelerator"]["name"] == "noisy"
    candidate = next(c for c in data["detection"]["candidates"] if c["name"] == "noisy")
    assert "noisy accelerator: print at import" in candidate["import_output"]
    assert "noisy accelerator: os.write at import" in candidate["import_output"]
    assert "noisy accelerator: print at import" in result.stderr
    assert not [line for line in result.stdout.splitlines() if line.startswith("noisy")]


def test_human_output_is_free_of_vendor_lines(noisy: Callable[..., Result]) -> None:
    result = noisy("list")
    assert result.returncode == 0, result.output
    assert "at import" not in result.stdout
    assert "noisy runtime: printf at import" in result.stderr


def test_installed_runtime_without_a_device_is_a_notice_naming_the_vendor_check(
    noisy: Callable[..., Result],
) -> None:
    result = noisy("doctor", "--json")
    assert result.returncode == 0, result.output  # a notice leaves the machine healthy
    data = result.json()
    assert data["healthy"] is True
    notice = next(p for p in data["problems"] if p["code"] == "no-device")
    assert notice["severity"] == "notice"
    assert "noisy_runtime is installed and loads, but sees no noisy device" in notice["title"]
    assert "run noisy-smi --list" in notice["fix"]
    human = noisy("doctor")
    assert human.returncode == 0, human.output
    flat = " ".join(human.stdout.split())
    assert "notice: noisy_runtime is installed and loads" in flat
    assert "No problems found (1 notice)." in flat


def test_no_device_hint_names_the_check_and_not_the_runtime_setup(noisy: Callable[..., Result]) -> None:
    data = noisy("explain", "noisy", "--json").json()
    assert data["outcome"] == "no-device"
    assert data["hint"] == "check which devices the driver sees: noisy-smi --list"
    assert data["summary"].endswith("sees 0 devices.")


ORDER = """
import os
from accelhal.process.vendor_output import stdout_to_stderr
with stdout_to_stderr() as captured:
    print("python line")
    os.write(1, b"native line\\n")
    print("python again")
print(repr(captured.text))
"""


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
def test_captured_text_keeps_the_order_python_and_native_code_wrote_it(unbuffered: bool) -> None:
    env = {k: v for k, v in clean_env().items() if k != "PYTHONUNBUFFERED"}
    env |= {"PYTHONUNBUFFERED": "1"} if unbuffered else {}
    done = subprocess.run([sys.executable, "-c", ORDER], env=env, capture_output=True, text=True, check=True)
    assert done.stdout == repr("python line\nnative line\npython again\n") + "\n"
    assert done.stderr == "python line\nnative line\npython again\n"  # the block's output goes to stderr


CHATTY = """
import os
import threading
import time


def _chatter():  # a runtime's logging thread: it writes to descriptor 1 until the process ends
    while True:
        os.write(1, b"chatty thread: os.write\\n")
        print("chatty thread: print", flush=True)
        time.sleep(0.002)


def _starts_a_thread():
    threading.Thread(target=_chatter, name="acme-chatter", daemon=True).start()
    return Verdict.no_device("chatty: no device")
"""
CHATTY_PLUGIN = backend_plugin("chatty", priority=10, probe_body="return _starts_a_thread()", module_prelude=CHATTY)
"""A probe that leaves a daemon thread writing to descriptor 1 (``os.write`` and ``print``) after it returned."""


@pytest.mark.parametrize("args", [["info", "--json"], ["list"]], ids=" ".join)
def test_a_plugins_thread_writing_to_stdout_after_its_probe_lands_on_stderr(
    install_distribution: InstallDistribution, args: list[str]
) -> None:
    site = install_distribution("acme-chatty", {"acme_chatty": CHATTY_PLUGIN}, {"chatty": "acme_chatty"}).parent
    result = run_accelhal(*args, env={"PYTHONPATH": str(site)})
    assert result.returncode == 0, result.output
    assert "chatty thread: os.write" in result.stderr and "chatty thread: print" in result.stderr
    if "--json" in args:  # exactly one document (its probe's import_output may quote what the thread wrote in it)
        assert result.json()["accelerator"]["name"] == "cpu", result.stdout
    else:
        assert "chatty thread" not in result.stdout, result.stdout
        assert "chatty" in result.stdout and "no-device" in result.stdout  # the table, its row included
