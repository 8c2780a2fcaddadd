"""Real vendor stacks: the real ``torch_npu`` wheel with the torch it is built for, and no Ascend hardware or CANN.

Run by ``nox -s "npu(torch_npu='2.13.0')"`` (CI runs it), which sets ``ACCELHAL_TEST_TORCH_NPU`` to the
torch_npu release under test: torch_npu X.Y.0 with the torch X.Y.0 it requires. Without the variable the
module is skipped (the README's suite): building and running that venv is a minute and a half of CPU that
the session spends instead.

The everyday situation of anyone who ``pip install``s torch_npu on a laptop, a CI runner
or a GPU box. torch's backend autoload loads torch_npu's ``torch.backends`` entry point
during ``import torch``, and torch_npu cannot find ``libhccl.so``: ``import torch``
itself fails. With ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` torch loads and the npu backend
is broken. Every subcommand runs in both situations, with and without ``--json`` and
with ``ACCELHAL_ACCELERATOR=npu``: the exit statuses are the documented ones, no
command dies by a signal or shows a traceback, every ``--json`` output is one valid
document, and the diagnosis (which entry point, its error, the fixes in order) is there.

The venv is real and its own (pip installs torch and torch_npu with their dependencies);
it is built once and kept (see :func:`tests.venvs.vendor_venv`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Result, clean_env
from tests.sharing import RunCache
from tests.venvs import vendor_venv

pytestmark = pytest.mark.slow

RELEASE_VARIABLE = "ACCELHAL_TEST_TORCH_NPU"
RELEASE = os.environ.get(RELEASE_VARIABLE, "").strip()
"""The torch_npu release under test, and the torch release it is built for (set by ``nox -s npu``)."""
if not RELEASE:
    pytest.skip(
        f"the real torch_npu stack is tested by nox -s \"npu(torch_npu='2.13.0')\" (CI runs it), which sets "
        f"{RELEASE_VARIABLE}; set it to a torch_npu release to run this module here",
        allow_module_level=True,
    )
TORCH = f"torch=={RELEASE}"
TORCH_NPU = f"torch_npu=={RELEASE}"

AUTOLOAD_ON: dict[str, str] = {}
AUTOLOAD_OFF = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
FORCED = {"ACCELHAL_ACCELERATOR": "npu"}

COMMANDS = (("info",), ("list",), ("explain",), ("explain", "npu"), ("doctor",), ("check", "npu"))
FORCED_COMMANDS = (("info",), ("list",), ("explain",), ("check", "npu"))

Case = tuple[str, tuple[str, ...], bool]
"""(situation, command, --json)."""

SITUATIONS: dict[str, dict[str, str]] = {
    "autoload": AUTOLOAD_ON,
    "no-autoload": AUTOLOAD_OFF,
    "forced": FORCED,
    "forced-no-autoload": {**FORCED, **AUTOLOAD_OFF},
}

EXIT_STATUS: dict[tuple[str, tuple[str, ...]], int] = {
    # import torch fails: no backend at all
    ("autoload", ("info",)): 2,
    ("autoload", ("list",)): 1,
    ("autoload", ("explain",)): 1,
    ("autoload", ("explain", "npu")): 1,  # selection failed: explain says why, and its status says so
    ("autoload", ("doctor",)): 1,
    ("autoload", ("check", "npu")): 2,
    # torch loads, the npu backend is broken, cpu is chosen
    ("no-autoload", ("info",)): 0,
    ("no-autoload", ("list",)): 0,
    ("no-autoload", ("explain",)): 0,
    ("no-autoload", ("explain", "npu")): 0,
    ("no-autoload", ("doctor",)): 1,
    ("no-autoload", ("check", "npu")): 2,
    # npu forced: never a silent fallback
    **{
        (situation, command): 2 if command[0] in ("info", "check") else 1
        for situation in ("forced", "forced-no-autoload")
        for command in FORCED_COMMANDS
    },
}

CASES: list[Case] = [
    *(
        (situation, command, as_json)
        for situation in ("autoload", "no-autoload")
        for command in COMMANDS
        for as_json in (False, True)
    ),
    *((situation, command, True) for situation in ("forced", "forced-no-autoload") for command in FORCED_COMMANDS),
]

API = "import accelhal\nprint(accelhal.get_accelerator().name)"
LATER = """
import contextlib, os, accelhal
with contextlib.suppress(accelhal.AccelhalError):
    accelhal.get_accelerator()
print(os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD"))
import torch  # once failed, never re-run in this process: an ImportError at once
"""


@pytest.fixture(scope="module")
def npu_python(run_cache: RunCache, accelhal_wheel: Path) -> Path:
    """The python of a venv holding the real torch_npu, the torch it is built for, pytest and accelhal."""
    return vendor_venv("torch_npu", [TORCH, "pytest"], [TORCH, TORCH_NPU], wheel=accelhal_wheel, run_cache=run_cache)


def run(python: Path, args: list[str], env: Mapping[str, str]) -> Result:
    """Run ``args`` with the venv's python in its own directory (the installed accelhal, not the checkout)."""
    proc = subprocess.run(
        [str(python), *args], env=clean_env(env), cwd=python.parent, capture_output=True, text=True, timeout=600
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def results(npu_python: Path) -> dict[Case, Result]:
    """Every case, run once (a few at a time: most of each run is torch loading)."""

    def one(case: Case) -> Result:
        situation, command, as_json = case
        args = ["-m", "accelhal", *command, *(["--json"] if as_json else [])]
        return run(npu_python, args, SITUATIONS[situation])

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(CASES, pool.map(one, CASES), strict=True))


def flat(result: Result) -> str:
    return " ".join(result.output.split())  # rich wraps at 80 columns


def document(result: Result) -> Any:
    return json.loads(result.stdout)


def test_the_venv_holds_the_real_vendor_stack(npu_python: Path) -> None:
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d: m.version(d) for d in ('torch', 'torch_npu', 'accelhal')} | "
        "{'torch.backends': [e.value for e in m.entry_points(group='torch.backends')]}))"
    )
    found = json.loads(run(npu_python, ["-c", code], {}).stdout)
    assert found["torch"].startswith(RELEASE) and found["torch_npu"] == RELEASE
    assert found["torch.backends"] == ["torch_npu:_autoload"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}: {' '.join(c[1])}{' --json' if c[2] else ''}")
def test_every_command_exits_as_documented_and_cleanly(results: dict[Case, Result], case: Case) -> None:
    result = results[case]
    situation, command, as_json = case
    assert result.returncode == EXIT_STATUS[situation, command], result.output
    assert "Traceback" not in result.output, result.output
    assert "TORCH_LIBRARY" not in result.output  # what a second 'import torch' says
    if as_json:
        assert isinstance(document(result), dict)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_every_command_names_the_entry_point_its_error_and_the_fixes(
    results: dict[Case, Result], command: tuple[str, ...], as_json: bool
) -> None:
    text = flat(results["autoload", command, as_json])
    assert "torch_npu" in text and "libhccl.so: cannot open shared object file: No such file or directory" in text
    position = 0
    for fix in ("set_env.sh", "TORCH_DEVICE_BACKEND_AUTOLOAD=0", "pip uninstall torch_npu"):  # all three, in order
        position = text.find(fix, position)
        assert position >= 0, (fix, text)


def test_info_json_carries_the_error_and_the_torch_diagnosis(results: dict[Case, Result]) -> None:
    data = document(results["autoload", ("info",), True])
    assert data["accelerator"] is None
    assert "not even the cpu fallback" in data["error"] and "torch itself cannot load" in data["error"]
    torch = data["detection"]["torch"]
    assert torch["loaded"] is False
    assert torch["error"].startswith("RuntimeError: Failed to load the backend extension: torch_npu")
    assert torch["cause"] == "ImportError: libhccl.so: cannot open shared object file: No such file or directory"
    assert torch["autoload"] == {
        "entry_point": "torch_npu",
        "value": "torch_npu:_autoload",
        "distribution": "torch_npu",
        "version": RELEASE,
        "error": torch["cause"],
    }
    assert [fix.split()[0] for fix in torch["fixes"]] == ["Make", "Or", "Or"]
    assert "install the CANN toolkit and source its set_env.sh" in torch["fixes"][0]


def test_list_json_gives_every_backend_the_one_torch_verdict(results: dict[Case, Result]) -> None:
    data = document(results["autoload", ("list",), True])
    reason = data["torch"]["reason"]
    assert reason.startswith("torch itself cannot load: ")
    assert {(b["status"], b["reason"]) for b in data["backends"]} == {("broken", reason)}
    assert data["chosen"] is None and "not even the cpu fallback" in data["error"]


def test_check_refuses_once(results: dict[Case, Result]) -> None:
    for situation, cause in (("autoload", "torch itself cannot load"), ("no-autoload", "import torch_npu failed")):
        human = results[situation, ("check", "npu"), False]
        assert human.stdout == ""
        assert human.stderr.count("accelhal: error:") == 1, human.stderr
        assert "accelerator 'npu' (requested by accelhal check) is not available" in flat(human)
        assert cause in flat(human) and "libhccl.so" in flat(human)
        data = document(results[situation, ("check", "npu"), True])
        assert data["command"] == "check" and "libhccl.so" in data["error"]


def test_doctor_names_the_autoload_culprit_and_the_vendor_runtime(results: dict[Case, Result]) -> None:
    found = {p["code"]: p for p in document(results["autoload", ("doctor",), True])["problems"]}
    assert f"torch_npu = torch_npu:_autoload from torch_npu {RELEASE}" in found["torch-autoload"]["detail"]
    assert "set_env.sh" in found["torch-autoload"]["fix"]
    broken = {p["code"]: p for p in document(results["no-autoload", ("doctor",), True])["problems"]}
    assert "libhccl.so" in broken["backend-broken"]["detail"]
    assert broken["backend-broken"]["fix"].startswith("Install the CANN toolkit and source its set_env.sh")


def test_without_autoload_torch_loads_and_npu_is_broken_with_its_own_error(results: dict[Case, Result]) -> None:
    data = document(results["no-autoload", ("info",), True])
    assert data["accelerator"]["name"] == "cpu" and data["detection"]["torch"]["loaded"] is True
    npu = next(c for c in data["detection"]["candidates"] if c["name"] == "npu")
    assert npu["status"] == "broken"
    assert npu["reason"] == (
        "import torch_npu failed: ImportError: libhccl.so: cannot open shared object file: No such file or directory"
    )
    assert npu["hint"].startswith("install the CANN toolkit and source its set_env.sh")
    explained = document(results["no-autoload", ("explain", "npu"), True])
    assert explained["outcome"] == "broken"
    assert explained["summary"].endswith("No such file or directory.")  # a sentence


def test_forcing_npu_fails_with_the_reason_never_falls_back(results: dict[Case, Result]) -> None:
    for situation, cause in (("forced", "torch itself cannot load"), ("forced-no-autoload", "import torch_npu failed")):
        data = document(results[situation, ("info",), True])
        assert data["accelerator"] is None
        assert "'npu' (requested by ACCELHAL_ACCELERATOR) is not available" in data["error"]
        assert cause in data["error"] and "Hint: " in data["error"]


def test_the_api_raises_one_clear_error_and_the_interpreter_exits_normally(npu_python: Path) -> None:
    result = run(npu_python, ["-c", API], {})
    assert result.returncode == 1, result.output  # an exception, not a signal (was: segmentation fault)
    assert "BackendUnavailableError" in result.stderr and "torch itself cannot load" in result.stderr
    assert "TORCH_LIBRARY" not in result.output
    later = run(npu_python, ["-c", LATER], {})
    assert later.returncode == 1, later.output
    assert later.stdout.split() == ["None"]  # torch_npu's change to the variable, made before it failed, is undone
    assert "ImportError: torch cannot be imported in this process" in later.stderr
