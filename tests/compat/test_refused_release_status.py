"""A refused release exits with the same status from every command that refuses it: 2, a user's set-up to change.

``docs/reference/cli.md``'s exit-status table gives 2 for what the user must change (a bad
variable, an unusable backend, Ray not installed) and 1 for vendor or torch code that raised.
A framework release outside accelhal's range is the user's to change, so the Accelerate runner,
the DeepSpeed hook command and ``accelhal ray-resources`` all exit with 2 and say which release
and which range, in one line on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import warm
from tests.cli.conftest import clean_env
from tests.distributions import lay_out

REFUSED = {
    "accelerate": ("accelhal.compat.accelerate", ["train.py"], "0.34.2", "accelerate>=1.0.0,<2"),
    "deepspeed": ("accelhal.compat.deepspeed", ["hook", "install", "--dir", "{target}"], "0.14.0", "deepspeed>=0.15.0"),
    "ray": ("accelhal", ["ray-resources"], "2.30.0", "ray>=2.40.0,<3"),
}


@pytest.mark.parametrize("framework", REFUSED)
def test_a_refused_release_exits_with_2_everywhere(framework: str, tmp_path: Path) -> None:
    module, args, version, range_ = REFUSED[framework]
    site, target = tmp_path / "seen", tmp_path / "target"
    target.mkdir()
    lay_out(site, framework, version)  # the installed release reads as VERSION (a dist-info first on the path)
    env = clean_env({"PYTHONPATH": f"{site}:{Path.cwd()}"})
    done = warm.run_module(module, [a.format(target=target) for a in args], env, sys.executable, 120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert f"{framework} {version} is outside" in line and range_ in line, line
