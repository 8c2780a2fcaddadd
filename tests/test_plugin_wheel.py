"""End to end: a third-party plugin built into a wheel and pip-installed next to accelhal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.sharing import RunCache
from tests.venvs import REPO, build_wheel, fresh_venv, pip_install, run

pytestmark = pytest.mark.slow

REPORT = """
import json, sys, accelhal
acc = accelhal.get_accelerator()
report = accelhal.detect()
acme = report.candidate("acme")
print(json.dumps({
    "chosen": acc.name, "rule": report.rule, "class": type(acc).__qualname__,
    "acme": None if acme is None else acme.model_dump(mode="json"),
    "plugins": {p.name: [p.state, p.distribution, p.distribution_version] for p in report.plugins},
    "accelhal_file": accelhal.__file__,
    "acme_class_imported": "acme_accel.accelerator" in sys.modules,
}))
"""


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory, run_cache: RunCache, accelhal_wheel: Path) -> Path:
    python = fresh_venv(tmp_path_factory.mktemp("plugin-wheel") / "venv")
    pip_install(python, accelhal_wheel, run_cache.wheel(REPO / "tests" / "data" / "acme-accel"))
    return python


def environment(**env: str) -> dict[str, str]:
    """This environment without accelhal's variables or ``PYTHONPATH`` (the checkout), plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC", "PYTHONPATH"))}
    return {**clean, **env}


def report(python: Path, **env: str) -> dict[str, object]:
    out = run([str(python), "-c", REPORT], env=environment(**env), cwd=python.parent)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_plugin_is_discovered_and_chosen_by_priority(venv_python: Path) -> None:
    result = report(venv_python)
    assert str(venv_python.parent.parent) in str(result["accelhal_file"])  # the installed wheel, not the checkout
    assert result["chosen"] == "acme" and result["rule"] == "priority"
    assert result["class"] == "AcmeAccelerator"
    acme = result["acme"]
    assert isinstance(acme, dict)
    assert acme["source"] == "acme-accel 0.1.0" and acme["status"] == "available" and acme["priority"] == 950
    assert result["plugins"]["acme"] == ["loaded", "acme-accel", "0.1.0"]  # type: ignore[index]


def test_plugin_without_a_device_is_passed_over(venv_python: Path) -> None:
    result = report(venv_python, ACME_DEVICES="0")
    assert result["chosen"] == "cpu" and result["rule"] == "fallback"
    assert result["acme"]["status"] == "no-device"  # type: ignore[index]
    assert result["acme_class_imported"] is False  # the lazy class was never imported


def test_variable_overrides_the_plugin(venv_python: Path) -> None:
    result = report(venv_python, ACCELHAL_ACCELERATOR="cpu")
    assert result["chosen"] == "cpu" and result["rule"] == "ACCELHAL_ACCELERATOR"
    assert result["acme_class_imported"] is False


def test_block_list_blocks_the_plugin(venv_python: Path) -> None:
    result = report(venv_python, ACCELHAL_BLOCK_PLUGINS="acme-accel")
    assert result["chosen"] == "cpu"
    assert result["acme"] is None
    assert result["plugins"]["acme"][0] == "blocked"  # type: ignore[index]


def test_forcing_the_plugin_by_name(venv_python: Path) -> None:
    result = report(venv_python, ACCELHAL_ACCELERATOR=" ACME ")
    assert result["chosen"] == "acme" and result["rule"] == "ACCELHAL_ACCELERATOR"


def test_the_installed_accelhal_program_shows_the_plugin_and_exits_as_documented(venv_python: Path) -> None:
    program = venv_python.parent / "accelhal"  # the launcher pip wrote from the wheel's entry point

    def accelhal(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        command = [str(program), *args]
        return subprocess.run(command, env=environment(**env), cwd=program.parent, capture_output=True, text=True)

    shown = accelhal("info", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["accelerator"]["name"] == "acme"
    mistaken = accelhal("info", ACCELHAL_ACCELERATOR="nonexistent")
    assert mistaken.returncode == 2 and mistaken.stdout == ""
    assert mistaken.stderr.startswith("accelhal: error: unknown accelerator 'nonexistent'"), mistaken.stderr


def test_a_wheel_is_built_outside_its_source_and_takes_no_stale_file_from_a_build_directory(tmp_path: Path) -> None:
    source = tmp_path / "acme-accel"
    shutil.copytree(
        REPO / "tests" / "data" / "acme-accel",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"),
    )
    stale = source / "build" / "lib" / "acme_accel" / "removed_since.py"  # what an earlier build left behind
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    with zipfile.ZipFile(build_wheel(source, tmp_path)) as wheel:
        names = wheel.namelist()
    assert "acme_accel/accelerator.py" in names
    assert "acme_accel/removed_since.py" not in names
    left = sorted(str(p.relative_to(source)) for p in source.rglob("*") if "__pycache__" not in p.parts)
    assert left == [
        "acme_accel",
        "acme_accel/__init__.py",
        "acme_accel/accelerator.py",
        "build",
        "build/lib",
        "build/lib/acme_accel",
        "build/lib/acme_accel/removed_since.py",
        "pyproject.toml",
    ]
