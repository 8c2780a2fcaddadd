"""A vendor distribution whose ``torch.backends`` entry point fails: ``import torch`` itself fails.

Staged as pip lays a distribution out (a module and its ``.dist-info`` with the entry
point), on ``PYTHONPATH`` of a fresh process: torch's real backend autoload loads it
during ``import torch``. The same distribution also registers an accelhal backend that
requires the vendor module, with its hint on making the runtime load. The real wheel of
a real vendor (``torch_npu``) is exercised by ``tests/test_vendor_stacks.py``. The autoload also
fails on an unrelated distribution whose ``entry_points.txt`` is not UTF-8 (the last tests).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.distributions import lay_out
from tests.torch_features import needs_device_autoload

pytestmark = needs_device_autoload

VENDOR = """
    import os
    print("brokenvendor: banner at import")
    os.write(1, b"brokenvendor: native banner at import\\n")
    raise ImportError("libbroken.so: cannot open shared object file: No such file or directory")

    def autoload():
        pass
"""

PLUGIN = """
    from accelhal import BackendSpec, hookimpl
    from accelhal.contract.probes import device_module_probe

    HINT = "install the Broken runtime and source its env.sh"

    @hookimpl
    def accelhal_register_backends(register):
        register(BackendSpec(name="brokendev", device_type="brokendev", priority=850, hint=HINT,
                             probe=device_module_probe("brokenvendor", "torch.brokendev", HINT),
                             accelerator="brokenvendor_accel:Never", requires=("torch", "brokenvendor")))
"""

API = """
import contextlib, os, sys, accelhal
with contextlib.suppress(accelhal.AccelhalError):
    accelhal.get_accelerator()
for _ in range(3):  # each would re-run torch's initialisation; the third used to crash the interpreter at exit
    with contextlib.suppress(ImportError):
        import torch
report = accelhal.detect()
print(report.torch.error, report.torch.autoload.distribution, report.torch.autoload.error, sep="|")
"""


@pytest.fixture
def broken(tmp_path: Path) -> Callable[..., Result]:
    """Run the command with the broken vendor distribution installed."""
    site = tmp_path / "site"
    files = {"brokenvendor.py": textwrap.dedent(VENDOR), "brokenvendor_plugin.py": textwrap.dedent(PLUGIN)}
    groups = {
        "torch.backends": {"brokenvendor": "brokenvendor:autoload"},
        "accelhal": {"brokendev": "brokenvendor_plugin"},
    }
    lay_out(site, "broken-vendor", "3.1", groups, files=files)

    def run(*args: str, env: dict[str, str] | None = None, code: str | None = None) -> Result:
        return run_accelhal(*args, env={"PYTHONPATH": str(site), **(env or {})}, code=code)

    return run


def test_one_torch_verdict_for_every_backend_with_the_fixes_in_order(broken: Callable[..., Result]) -> None:
    result = broken("list", "--json")
    assert result.returncode == 1, result.output
    data = result.json()
    torch = data["torch"]
    assert torch["autoload"] == {
        "entry_point": "brokenvendor",
        "value": "brokenvendor:autoload",
        "distribution": "broken-vendor",
        "version": "3.1",
        "error": "ImportError: libbroken.so: cannot open shared object file: No such file or directory",
    }
    assert torch["fixes"] == [
        "Make broken-vendor loadable: install the Broken runtime and source its env.sh.",
        "Or set TORCH_DEVICE_BACKEND_AUTOLOAD=0 so that 'import torch' skips broken-vendor's entry point; "
        "accelhal then probes broken-vendor itself and uses another backend while it cannot load.",
        "Or uninstall it: pip uninstall broken-vendor.",
    ]
    assert {(b["status"], b["reason"], b["hint"]) for b in data["backends"]} == {
        ("broken", torch["reason"], " ".join(torch["fixes"]))
    }
    assert torch["reason"].startswith("torch itself cannot load: 'import torch' runs torch's backend autoload")
    assert torch["output"] == "brokenvendor: banner at import\nbrokenvendor: native banner at import\n"
    assert "banner" in result.stderr
    assert "TORCH_LIBRARY" not in result.output  # torch was imported once


@pytest.mark.parametrize(
    ("args", "status"),
    [(["info"], 2), (["list"], 1), (["explain"], 1), (["explain", "brokendev"], 1), (["check", "cpu"], 2)],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_every_command_says_it_and_json_is_a_document(
    broken: Callable[..., Result], args: list[str], status: int
) -> None:
    for as_json in (False, True):
        result = broken(*args, *(["--json"] if as_json else []))
        assert result.returncode == status, result.output
        assert "Traceback" not in result.output
        if as_json:
            assert isinstance(result.json(), dict)
        text = " ".join(result.output.split())
        assert "brokenvendor" in text and "libbroken.so: cannot open shared object file" in text
        assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in text and "pip uninstall broken-vendor" in text
        if not as_json:  # the cause once, not once per backend
            assert text.count("libbroken.so: cannot open shared object file") == 1, text


SAID_ONCE = """
import accelhal
try:
    accelhal.get_accelerator()
except accelhal.BackendUnavailableError as exc:
    print(exc)
report = accelhal.detect()
print(report.error)
print(report.explanation)
"""


def test_the_cause_is_said_once_not_once_per_backend(broken: Callable[..., Result]) -> None:
    result = broken(code=SAID_ONCE)
    assert result.returncode == 0, result.output
    raised, error, explanation = result.stdout.strip().splitlines()
    assert error.endswith(raised)
    for text in (raised, explanation):
        assert text.count("libbroken.so: cannot open shared object file") == 1, text
        assert ".." not in text
    names = "xpu, brokendev, npu, sdaa, mps, hpu, mlu, supa, musa, cuda and xla"
    assert "not even the cpu fallback: cpu: broken (torch itself cannot load: 'import torch' runs" in raised
    assert f"No such file or directory.). {names} are broken for the same reason. Hint: Make broken-vendor" in raised


def test_human_list_says_it_once_above_the_table(broken: Callable[..., Result]) -> None:
    result = broken("list")
    text = " ".join(result.stdout.split())
    assert text.startswith("torch cannot load torch itself cannot load:")
    assert "1. Make broken-vendor loadable" in text and "3. Or uninstall it" in text
    assert text.count("libbroken.so") == 1  # the table and the error line point above
    assert "torch cannot load (see above)" in text


def test_torch_is_never_imported_twice_and_the_process_exits_normally(broken: Callable[..., Result]) -> None:
    result = broken(code=API)
    assert result.returncode == 0, result.output
    error, distribution, cause = result.stdout.strip().split("|")
    assert error.startswith("RuntimeError: Failed to load the backend extension: brokenvendor")
    assert distribution == "broken-vendor" and cause.startswith("ImportError: libbroken.so")
    assert "TORCH_LIBRARY" not in result.output


def test_turning_autoload_off_heals_it(broken: Callable[..., Result]) -> None:
    result = broken("info", "--json", env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert result.returncode == 0, result.output
    data = result.json()
    assert data["accelerator"]["name"] == "cpu" and data["detection"]["torch"]["loaded"] is True
    vendor = next(c for c in data["detection"]["candidates"] if c["name"] == "brokendev")
    assert vendor["status"] == "broken"  # its own probe runs now, and finds its own error
    assert vendor["reason"] == (
        "import brokenvendor failed: ImportError: libbroken.so: cannot open shared object file: No such file or "
        "directory"
    )
    assert vendor["hint"] == "install the Broken runtime and source its env.sh"
    assert "brokenvendor: banner at import" in vendor["import_output"]


EARLIER = """
import contextlib, accelhal
with contextlib.suppress(Exception):
    import torch  # the program's own attempt fails first
with contextlib.suppress(accelhal.AccelhalError):
    accelhal.get_accelerator()
print(accelhal.detect().torch.reason)
"""


def test_a_failure_before_accelhal_tried_is_recognised_not_repeated(broken: Callable[..., Result]) -> None:
    result = broken(code=EARLIER)
    assert result.returncode == 0, result.output
    assert "'import torch' failed earlier in this process, before accelhal imported it" in result.stdout
    assert "TORCH_LIBRARY" not in result.output


NOT_UTF8 = b"[console_scripts]\nlatin-tool = latin_tool:main  # caf\xe9\n"
"""An ``entry_points.txt`` that an old tool wrote in Latin-1; ``importlib.metadata`` raises on it."""

RAISED = """
import accelhal
try:
    accelhal.get_accelerator()
except accelhal.BackendUnavailableError as exc:
    print(exc)
"""


@pytest.fixture
def latin_tool(tmp_path: Path) -> Path:
    """An unrelated distribution whose ``entry_points.txt`` is not UTF-8: its ``.dist-info`` directory."""
    info = lay_out(tmp_path / "site", "latin-tool", "0.9")
    (info / "entry_points.txt").write_bytes(NOT_UTF8)
    return info


def test_an_unrelated_entry_points_file_that_is_not_utf8_is_named_not_torch(latin_tool: Path) -> None:
    """Before, the hint said to reinstall torch; torch is fine, the other distribution's file is not UTF-8."""
    result = run_accelhal(code=RAISED, env={"PYTHONPATH": str(latin_tool.parent)})
    assert result.returncode == 0, result.output
    message = result.stdout.strip()
    file = str(latin_tool / "entry_points.txt")
    assert (
        "cpu: broken (torch itself cannot load: 'import torch' runs torch's backend autoload, which reads the entry "
        f"points of every installed distribution, and {file!r} of latin_tool 0.9 is not UTF-8 (UnicodeDecodeError: "
        "'utf-8' codec can't decode byte 0xe9 in position 53: invalid continuation byte).)"
    ) in message
    assert message.partition(" Hint: ")[2] == (
        "Repair or remove latin_tool 0.9, whose file is not UTF-8: reinstall it (pip install --force-reinstall "
        "latin_tool), or save that file as UTF-8, or uninstall it (pip uninstall latin_tool); torch itself needs no "
        "repair. Or set TORCH_DEVICE_BACKEND_AUTOLOAD=0 so that 'import torch' skips its backend autoload, which "
        "reads that file; accelhal then probes the vendor backends itself."
    )


def test_turning_autoload_off_gets_past_an_entry_points_file_that_is_not_utf8(latin_tool: Path) -> None:
    code = "import accelhal; print(accelhal.get_accelerator().name)"
    env = {"PYTHONPATH": str(latin_tool.parent), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    result = run_accelhal(code=code, env=env)
    assert result.returncode == 0, result.output
    assert result.stdout.split() == ["cpu"]
