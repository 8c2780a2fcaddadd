"""An installed distribution whose ``entry_points.txt`` is not UTF-8 is named, with what to do about it.

``import torch`` (its backend autoload) and pydantic (its plugin loader) read every installed
distribution's entry points, and ``importlib.metadata`` raises on a file that is not UTF-8.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_accelhal
from tests.cli.test_doctor import problems
from tests.distributions import lay_out
from tests.torch_features import needs_device_autoload

FRESH = "import runpy\nrunpy.run_module('accelhal', run_name='__main__')"
"""``python -m accelhal`` in a fresh interpreter: a warm one imported torch before the file could stop it."""


@pytest.fixture
def latin(tmp_path: Path) -> Path:
    """A site directory holding ``latin 1.0``, whose ``entry_points.txt`` is Latin-1; the file."""
    info = lay_out(tmp_path / "site", "latin", "1.0")
    file = info / "entry_points.txt"
    file.write_bytes(b"[console_scripts]\nlatin = latin:main  # caf\xe9\n")
    return file


@pytest.mark.slow  # a fresh interpreter imports torch in each of doctor's children: about 4.5 s
@needs_device_autoload  # an older torch reads no entry point in 'import torch'
def test_doctor_names_the_file_that_keeps_torch_from_importing(latin: Path) -> None:
    env = {"PYTHONPATH": str(latin.parent.parent), "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    result = run_accelhal("doctor", "--json", env=env, code=FRESH)
    assert result.returncode == 1, result.output
    found = problems(result)
    assert "check-failed" not in found, found
    torch = found["torch-autoload"]
    assert str(latin) in torch["detail"] and "latin 1.0" in torch["detail"], torch
    assert "not UTF-8" in torch["detail"], torch
    assert "pip install --force-reinstall latin" in torch["fix"], torch


def test_every_command_and_detect_name_the_file_that_stops_pydantic(latin: Path) -> None:
    env = {"PYTHONPATH": str(latin.parent.parent)}
    for args in (("info",), ("list", "--json")):
        result = run_accelhal(*args, env=env, code=FRESH)
        assert result.returncode == 1, result.output
        assert "Traceback" not in result.output, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("accelhal: error: "), result.output
        assert str(latin) in lines[0] and "latin 1.0" in lines[0], lines
        assert "PYDANTIC_DISABLE_PLUGINS=__all__" in lines[0], lines
    code = (
        "import accelhal\n"
        "try:\n    accelhal.detect()\n"
        "except accelhal.AccelhalError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    result = run_accelhal(env=env, code=code)
    assert result.returncode == 0 and "Traceback" not in result.output, result.output
    assert str(latin) in result.stdout and "latin 1.0" in result.stdout, result.stdout
