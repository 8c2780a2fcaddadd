"""DeepSpeed's own accelerator unit test, run with pytest in a fresh process where DeepSpeed holds accelhal's adapter.

The test files are DeepSpeed's ``tests/unit/v1/accelerator/test_accelerator.py`` at the tag of
a release, under ``tests/data/deepspeed_unit/v<release>/`` (its README says where each came
from). The one for the installed release is run; ``install()`` is called before pytest imports
it, so every ``get_accelerator()`` in it answers with the adapter.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from accelhal.compat.deepspeed._releases import SUPPORTED
from tests import warm
from tests.compat import REPO, child_environment, requires_deepspeed

UNIT = REPO / "tests" / "data" / "deepspeed_unit"

RUN = """
import json, sys
from accelhal.compat.deepspeed import install
install("cpu", disable_ops=("ShareMemCommBuilder",))
import pytest
from deepspeed.accelerator import get_accelerator
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist", "test_accelerator.py"])
print(json.dumps({"exit": int(code), "accelerator": type(get_accelerator()).__name__}))
"""

pytestmark = requires_deepspeed


def test_deepspeeds_accelerator_test_passes_through_the_adapter(
    ds: Any, deepspeed_ops_cache: Path, tmp_path: Path
) -> None:
    """From 0.19.6 its native-pinning tests build DeepSpeed's ``pin_memory`` op (into the kept op cache)."""
    release = SUPPORTED.check()
    source = UNIT / f"v{release}" / "test_accelerator.py"
    if not source.is_file():
        pytest.skip(f"DeepSpeed's test_accelerator.py of v{release} is not in {UNIT.relative_to(REPO)}")
    shutil.copy(source, tmp_path / "test_accelerator.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # DeepSpeed's test alone, not this project's configuration
    env = child_environment(ACCELHAL_OPS_CACHE=str(deepspeed_ops_cache))
    done = warm.run_code(RUN, [], env, sys.executable, 300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"exit": 0, "accelerator": "AccelhalDeepSpeedAccelerator"}, done.stdout
    assert " passed" in done.stdout and " failed" not in done.stdout
