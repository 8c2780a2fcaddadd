"""A DeepSpeed whose own import fails is named as the failure: DeepSpeed's, not accelhal's.

DeepSpeed 0.15.4 with torch 2.6.0's triton on a machine without a GPU fails in its own
``import deepspeed`` (triton: ``0 active drivers ([]). There should only be one.``). Through the
adapter the traceback began in ``accelhal/compat/deepspeed/__init__.py`` and ended in triton's
``RuntimeError``, so users blamed accelhal. The adapter's entry points (``install``,
``as_deepspeed_accelerator``, ``backend_from_deepspeed``) now end in
``DeepSpeedImportError`` (an ``ImportError``), which names the release, the error and where it
was raised, and says that ``import deepspeed`` fails the same way without accelhal.

The DeepSpeed here is a stand-in laid out as pip would (``deepspeed`` 0.15.4), whose package
import raises triton's error from a module of its own, as the real one does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_accelhal
from tests.distributions import lay_out

TRITON = "0 active drivers ([]). There should only be one."

CALLS = {
    "install": "from accelhal.compat.deepspeed import install\ninstall('cpu')\n",
    "as_deepspeed_accelerator": "from accelhal.compat.deepspeed import as_deepspeed_accelerator\n"
    "as_deepspeed_accelerator()\n",
}


@pytest.fixture
def failing_deepspeed(tmp_path: Path) -> dict[str, str]:
    files = {
        "deepspeed/__init__.py": "from deepspeed import ops_standin\n",
        "deepspeed/ops_standin.py": f"raise RuntimeError({TRITON!r})\n",
    }
    (tmp_path / "deepspeed").mkdir()
    lay_out(tmp_path, "deepspeed", "0.15.4", files=files)
    return {"PYTHONPATH": str(tmp_path)}


@pytest.mark.parametrize("call", CALLS)
def test_the_failure_is_named_as_deepspeeds(failing_deepspeed: dict[str, str], call: str) -> None:
    result = run_accelhal(code=CALLS[call], env=failing_deepspeed)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    named = "accelhal.compat.deepspeed.DeepSpeedImportError: deepspeed 0.15.4 fails in its own import"
    assert last.startswith(named), result.stderr
    assert f"RuntimeError: {TRITON}" in last and "deepspeed/ops_standin.py" in last
    assert "'python -c \"import deepspeed\"' fails the same way without accelhal" in last
