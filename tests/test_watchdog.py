"""A program whose selection waits on a slow or stuck runtime logs one line naming it; the result is the same.

The backend ``acmehang`` (:mod:`tests.cli.launch`) answers ``device_count()`` after a delay
here. With ``ACCELHAL_HANG_WARNING_SECONDS`` below the delay, the program's first
``get_accelerator()`` logs one warning naming the backend, the call, where it is and the
variable that skips it, and still returns the slow backend; a quick probe logs nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_accelhal
from tests.cli.launch import install_hanging_plugin

PROGRAM = """
import logging, sys, threading
logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
import accelhal
assert "accelhal.process.watchdog" not in sys.modules and threading.active_count() == 1  # accelhal starts nothing
print(accelhal.get_accelerator().name)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_hanging_plugin(tmp_path_factory.mktemp("site") / "site-packages")


def test_a_slow_probe_is_logged_once_and_still_chosen(site: str) -> None:
    env = {"PYTHONPATH": site, "ACME_RUNTIME": "slow1.5", "ACCELHAL_HANG_WARNING_SECONDS": "0.5"}
    result = run_accelhal(code=PROGRAM, code_after_torch=True, env=env)
    assert result.returncode == 0, result.output
    assert result.stdout.split() == ["acmehang"]  # the watchdog changes nothing
    [line] = [line for line in result.stderr.splitlines() if "has not answered" in line]
    said = "WARNING accelhal accelhal: backend 'acmehang' (its probe) has not answered for 0.5 s (in device_count ("
    assert line.startswith(said), line
    assert f"{Path(site) / 'acme_hang.py'}:" in line
    assert line.endswith("); to skip it: ACCELHAL_BLOCK_PLUGINS=acmehang (or ACCELHAL_ACCELERATOR=cpu)"), line


def test_a_quick_probe_logs_nothing(site: str) -> None:
    env = {"PYTHONPATH": site, "ACME_RUNTIME": "slow0", "ACCELHAL_HANG_WARNING_SECONDS": "5"}
    result = run_accelhal(code=PROGRAM, code_after_torch=True, env=env)
    assert result.returncode == 0 and result.stdout.split() == ["acmehang"], result.output
    assert "has not answered" not in result.stderr
