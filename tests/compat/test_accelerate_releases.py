"""The Accelerate and transformers releases the adapter supports: every recorded release's shape, and refusals.

``tests/data/accelerate-shapes.json`` holds what the adapter touches, read from the wheel of
every release in both ranges (``scripts/record_accelerate_shapes.py``). The adapter's tables
must give each release its recorded shape; the installed releases, as loaded, must be what was
recorded for them; and ``install()`` refuses a release outside a range, or a member in a shape
its release does not have, before anything is patched.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from accelhal.compat._releases import ReleaseRange, ShapeTable
from accelhal.compat.accelerate._releases import (
    MEMBERS,
    SHAPES,
    SUPPORTED,
    SUPPORTED_TRANSFORMERS,
    TRANSFORMERS_MEMBERS,
    TRANSFORMERS_SHAPES,
    Shape,
)
from tests import warm
from tests.compat import REPO, child_environment

DATA = REPO / "tests" / "data" / "accelerate-shapes.json"
RECORDED: dict[str, dict[str, dict[str, str]]] = json.loads(DATA.read_text(encoding="utf-8"))
TABLES: dict[str, tuple[ReleaseRange, ShapeTable[Shape]]] = {
    "accelerate": (SUPPORTED, SHAPES),
    "transformers": (SUPPORTED_TRANSFORMERS, TRANSFORMERS_SHAPES),
}

needs_both = pytest.mark.skipif(
    importlib.util.find_spec("accelerate") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the accelerate extra and transformers: pip install 'accelhal[test]'",
)


def _minor(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("distribution", sorted(TABLES))
def test_every_minor_release_of_the_range_is_recorded(distribution: str) -> None:
    supported, _ = TABLES[distribution]
    releases = list(RECORDED[distribution])
    assert releases[0] == supported.floor and releases[-1] == supported.newest
    assert all(supported.admits(release) for release in releases)
    minors = {_minor(release) for release in releases}
    floor_major, floor_minor = _minor(supported.floor)
    for major in {major for major, _ in minors}:
        present = sorted(minor for found, minor in minors if found == major)
        first = floor_minor if major == floor_major else 0
        assert present == list(range(first, present[-1] + 1)), f"{distribution} {major}.x: a minor release is missing"


@pytest.mark.parametrize("distribution", sorted(TABLES))
def test_the_table_gives_every_recorded_release_its_shape(distribution: str) -> None:
    _, table = TABLES[distribution]
    members = {m.key for m in (MEMBERS if distribution == "accelerate" else TRANSFORMERS_MEMBERS)}
    wrong = {
        release: {
            key: (table.shape_for(release).get(key), shape)
            for key, shape in recorded.items()
            if shape != table.shape_for(release).get(key)
        }
        for release, recorded in RECORDED[distribution].items()
        if dict(table.shape_for(release)) != recorded
    }
    assert wrong == {}, "release: {member: (the table's shape, the recorded one)}"
    assert all(set(recorded) == members for recorded in RECORDED[distribution].values())


def test_a_release_in_a_shape_the_table_does_not_know_fails_the_comparison() -> None:
    changed = {**RECORDED["accelerate"][SUPPORTED.newest]}
    key = MEMBERS[0].key
    changed[key] = "function (self, cpu, backend)"
    assert dict(SHAPES.shape_for(SUPPORTED.newest)) != changed


LOADED = """
import json
from importlib import metadata
from accelhal.compat.accelerate import _shape
from accelhal.compat.accelerate._releases import MEMBERS, TRANSFORMERS_MEMBERS
print(json.dumps({
    "versions": {name: metadata.version(name) for name in ("accelerate", "transformers")},
    "loaded": _shape.loaded(MEMBERS + TRANSFORMERS_MEMBERS),
    "installed": _shape.installed(TRANSFORMERS_MEMBERS),
}))
"""


@needs_both
def test_the_installed_releases_as_loaded_are_what_was_recorded_for_them() -> None:
    done = warm.run_code(LOADED, [], child_environment(), sys.executable, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    for distribution, release in found["versions"].items():
        recorded = RECORDED[distribution][release]
        assert {key: found["loaded"][key] for key in recorded} == recorded, distribution
    assert found["installed"] == {key: found["loaded"][key] for key in found["installed"]}


REFUSED = """
import json, sys
from pathlib import Path
import accelhal.compat.accelerate as adapter
from accelhal.errors import UnsupportedReleaseError

out = {}
for distribution, release in [tuple(arg.split("==")) for arg in sys.argv[1:]]:
    fake = Path(sys.argv[0]).parent / f"{distribution}-{release}"
    (fake / f"{distribution}-{release}.dist-info").mkdir(parents=True)
    (fake / f"{distribution}-{release}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\\nName: {distribution}\\nVersion: {release}\\n"
    )
    sys.path.insert(0, str(fake))
    try:
        adapter.install()
        out[release] = "installed"
    except UnsupportedReleaseError as exc:
        out[release] = str(exc)
    sys.path.remove(str(fake))
out["patched"] = adapter.is_installed()
out["imported"] = sorted({m.split(".")[0] for m in sys.modules} & {"accelerate", "transformers", "torch"})
print(json.dumps(out))
"""


@needs_both
def test_releases_outside_the_ranges_are_refused_before_anything_is_imported_or_patched(tmp_path: Path) -> None:
    script = tmp_path / "refused.py"
    script.write_text(REFUSED, encoding="utf-8")
    cases = ["accelerate==0.34.2", "accelerate==2.0.0", "transformers==4.45.2", "transformers==6.0.0"]
    done = warm.run_script(script, cases, child_environment(), sys.executable, timeout=120)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    ranges = {"accelerate": "accelerate>=1.0.0,<2", "transformers": "transformers>=4.46.0,<6"}
    newest = {"accelerate": "1.0.0 to 1.15.0", "transformers": "4.46.0 to 5.23.0"}
    for case in cases:
        distribution, release = case.split("==")
        assert found[release] == (
            f"{distribution} {release} is outside the releases accelhal supports ({ranges[distribution]}): "
            f"tested from {newest[distribution]}; install a release in that range"
        )
    assert found["patched"] is False
    assert "accelerate" not in found["imported"] and "transformers" not in found["imported"]


CHANGED = """
import accelerate.state
import accelhal.compat.accelerate as adapter
from accelhal.errors import ContractError

def _prepare_backend(self, cpu=False, backend=None):
    return backend, None

accelerate.state.PartialState._prepare_backend = _prepare_backend
try:
    adapter.install()
except ContractError as exc:
    print(exc)
print(adapter.is_installed(), accelerate.state.PartialState._prepare_backend is _prepare_backend)
"""


@needs_both
def test_a_member_in_another_shape_than_its_release_has_is_refused_by_name(tmp_path: Path) -> None:
    script = tmp_path / "changed.py"
    script.write_text(CHANGED, encoding="utf-8")
    done = warm.run_script(script, [], child_environment(), sys.executable, timeout=120)
    assert done.returncode == 0, done.stderr
    message, after = done.stdout.strip().splitlines()
    assert message == (
        f"accelerate {metadata.version('accelerate')} is not the shape accelhal.compat.accelerate knows for it: "
        "accelerate.state:PartialState._prepare_backend is 'function (self, cpu, backend)', not "
        "'function (self, cpu, sagemaker_dp, backend)' (tested from 1.0.0 to 1.15.0; docs/accelerate.md)"
    )
    assert after == "False True"


def test_the_runner_refuses_in_one_line_and_names_its_usage(tmp_path: Path) -> None:
    info = tmp_path / "accelerate-0.34.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: accelerate\nVersion: 0.34.2\n", encoding="utf-8")
    env = child_environment(PYTHONPATH=f"{tmp_path}:{REPO}")
    runner = [sys.executable, "-m", "accelhal.compat.accelerate"]
    refused = subprocess.run([*runner, "train.py"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.splitlines() == [
        "accelhal.compat.accelerate: UnsupportedReleaseError: accelerate 0.34.2 is outside the releases accelhal "
        "supports (accelerate>=1.0.0,<2): tested from 1.0.0 to 1.15.0; install a release in that range"
    ]
    bare = subprocess.run(runner, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (bare.returncode, bare.stderr) == (
        2,
        "usage: python -m accelhal.compat.accelerate SCRIPT [ARGS] | -m MODULE [ARGS]\n",
    )
