"""What a message tells a user to install for an extra: a command that works while accelhal is not on the index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from accelhal.extras import install_advice, requirements

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


def normalised(requirement: str) -> str:
    from packaging.requirements import Requirement

    return str(Requirement(requirement))


@pytest.mark.parametrize("extra", ["kit", "ray", "deepspeed", "lightning", "accelerate", "transformers", "mpi"])
def test_an_extra_s_requirements_are_the_ones_pyproject_declares(extra: str) -> None:
    assert [normalised(r) for r in requirements(extra)] == [normalised(r) for r in EXTRAS[extra]]


def test_an_extra_that_names_accelhal_again_leaves_that_out() -> None:
    assert all(not r.startswith("accelhal") for r in requirements("test"))
    assert normalised(requirements("test")[0]) == normalised(EXTRAS["test"][1])


def test_the_advice_never_asks_the_index_for_accelhal() -> None:
    advice = install_advice("ray")
    assert advice.startswith("pip install 'ray[train]")
    assert "pip install 'accelhal[" not in advice
    assert "pip install './accelhal[ray]'" in advice


def test_an_extra_accelhal_does_not_declare_gets_the_clone_form_only() -> None:
    assert install_advice("nosuch") == "accelhal's nosuch extra (from a clone: pip install './accelhal[nosuch]')"


def test_accelhal_compat_ray_without_ray_gives_a_command_pip_can_run() -> None:
    code = "import sys; sys.modules['ray'] = None\nimport accelhal.compat.ray as r\nr.resource_name(\"cpu\")"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("accelhal.errors.AccelhalError: accelhal.compat.ray needs Ray"), out.stderr
    assert "pip install 'ray[train]" in last and "'accelhal[ray]'" not in last
