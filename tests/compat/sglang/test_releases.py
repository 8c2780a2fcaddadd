"""The SGLang releases the bridge supports: the range, nox's pins, the refusal, and the shape table."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from accelhal.compat._releases import release_key
from accelhal.compat.sglang import MEMBERS
from accelhal.compat.sglang._releases import SHAPES, SUPPORTED
from tests.compat.engines import run_code
from tests.compat.sglang.runs import FORCED, environment
from tests.compat.sglang.shapes import DATA, shape
from tests.distributions import lay_out

REPO = Path(__file__).resolve().parents[3]


def nox_ends() -> dict[str, dict[str, str]]:
    """noxfile.py's ``SGLANG_ENDS`` (read, not run): end -> distribution -> release."""
    for node in ast.parse((REPO / "noxfile.py").read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "SGLANG_ENDS":
            ends = ast.literal_eval(node.value)  # type: ignore[arg-type]
            return {end: dict(pin.split("==") for pin in pins) for end, pins in ends.items()}
    raise AssertionError("noxfile.py has no SGLANG_ENDS")


def test_the_installed_release_is_in_the_range() -> None:
    assert SUPPORTED.admits(SUPPORTED.installed())


def test_nox_pins_the_ends_of_the_range() -> None:
    ends = nox_ends()
    assert (ends["floor"]["sglang"], ends["newest"]["sglang"]) == (SUPPORTED.floor, SUPPORTED.newest)


REFUSED = """
import sys
from sglang.srt.platforms import current_platform
current_platform.device_type
"""


def test_a_release_outside_the_range_is_refused_before_anything_is_patched(tmp_path: Path) -> None:
    """An ``sglang`` 0.6.0 distribution first on the path: the bridge refuses it with accelhal's typed error,
    before it imports anything of SGLang's platform or builds a class."""
    lay_out(tmp_path, "sglang", "0.6.0")
    done = run_code(REFUSED, environment(site=tmp_path, **FORCED))
    assert done.returncode != 0
    assert "UnsupportedReleaseError" in done.stderr
    assert "0.6.0" in done.stderr and SUPPORTED.specifier in done.stderr
    assert "accelhal/compat/sglang/_platform.py" in done.stderr.split("UnsupportedReleaseError")[0]


def test_every_supported_release_recorded_is_covered_by_the_table_and_its_row() -> None:
    """Per release recorded (0.5.22 and 0.5.23), the members its SRTPlatform lacks are exactly its shape row's."""
    recorded = json.loads(DATA.read_text())
    assert {"0.5.22", "0.5.23"} <= set(recorded)
    for release, found in sorted(recorded.items(), key=lambda item: release_key(item[0])):
        assert SUPPORTED.admits(release), release
        members = set(found["platform"])
        assert not members - set(MEMBERS), f"SGLang {release}: members the table does not cover"
        assert set(MEMBERS) - members == set(SHAPES.shape_for(release)), f"SGLang {release}"


def test_the_installed_release_has_the_shape_recorded_for_it() -> None:
    """The record is what the installed release shows (so the other release's record is of the same making)."""
    recorded = json.loads(DATA.read_text())
    assert recorded[SUPPORTED.installed()] == shape()
