"""The example plugin of docs/plugins.md, built into a wheel and installed in a fresh venv, conforms."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sharing import RunCache
from tests.venvs import REPO, fresh_venv, pip_install

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "docs" / "examples" / "accelhal-example-plugin"


def test_example_plugin_passes_the_suite_from_its_wheel(
    tmp_path: Path, run_cache: RunCache, accelhal_wheel: Path
) -> None:
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, accelhal_wheel, run_cache.wheel(EXAMPLE))
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE / "tests", project / "tests")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC", "PYTHONPATH", "PYTEST_"))}
    done = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--accelhal-backend=loopback"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary
    assert "the 'loopback' backend does not declare capability 'graphs'" in done.stdout
    where = subprocess.run(
        [str(python), "-c", "import accelhal, accelhal_loopback; print(accelhal.__file__, accelhal_loopback.__file__)"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.count(str(tmp_path / "venv")) == 2  # both from the installed wheels, not the checkout
