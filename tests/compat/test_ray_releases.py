"""The Ray releases the adapter supports: every release's recorded shape is the declared one, the rest refused.

``tests/data/ray-shapes.json`` holds what the adapter touches in every Ray release from the
floor to the newest, read from each release's wheel by ``scripts/record_ray_shapes.py``. The
tests check the adapter's ``SHAPES`` table and ``docs/ray.md``'s resources against every
recorded release, the installed Ray against its recorded row (read from the imported Ray, so
the recording is true), and that a release outside the range is refused before Ray is imported.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelhal.compat._releases import release_key
from accelhal.compat.ray._releases import API, SHAPES, SUPPORTED, RayShape
from accelhal.compat.ray._resources import bind
from accelhal.selection import registry
from tests.compat import REPO
from tests.compat.ray_shapes import documented_resources, load
from tests.distributions import lay_out

RECORDED = load()


def shape_of(record: dict[str, Any]) -> RayShape:
    """The :class:`RayShape` a recorded release has."""
    api = record["api"]
    rest = {name: api[name] for name in API}
    return RayShape(record["train_v2"], api["sessions"], api["execute"], rest)


def test_the_recorded_releases_span_the_range() -> None:
    releases = list(RECORDED)
    assert releases == sorted(releases, key=release_key)
    assert releases[0] == SUPPORTED.floor and releases[-1] == SUPPORTED.newest
    assert all(SUPPORTED.admits(release) for release in releases)
    minors = {release_key(r)[0][:2] for r in releases}
    assert len(minors) == 21  # 2.40 to 2.60, every minor release


@pytest.mark.parametrize("release", list(RECORDED))
def test_every_recorded_release_has_the_declared_shape(release: str) -> None:
    assert shape_of(RECORDED[release]) == SHAPES.shape_for(release)


def test_a_shape_the_table_does_not_know_fails() -> None:
    changed = copy.deepcopy(RECORDED[SUPPORTED.newest])
    changed["api"]["on_start"].append("context")  # as if Ray gave the backend hook another parameter
    assert shape_of(changed) != SHAPES.shape_for(SUPPORTED.newest)
    changed = copy.deepcopy(RECORDED[SUPPORTED.floor])
    changed["train_v2"] = "default"
    assert shape_of(changed) != SHAPES.shape_for(SUPPORTED.floor)


@pytest.mark.parametrize("release", list(RECORDED))
def test_every_recorded_release_gives_the_documented_resources(release: str) -> None:
    managers = [tuple(manager) for manager in RECORDED[release]["managers"].values()]
    built_in = [r.spec for r in registry().ordered() if r.plugin.builtin]
    bound = {
        spec.name: bind(spec.name, spec.device_type, spec.visible_devices_envs, managers).resource or "—"
        for spec in built_in
    }
    assert bound == documented_resources(release)


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra (pip install '.[ray]')")
def test_the_installed_ray_is_its_recorded_release() -> None:
    from importlib.metadata import version

    from tests.compat.ray_shapes import from_ray

    installed = version("ray")
    assert installed in RECORDED, f"ray {installed} is not recorded: python scripts/record_ray_shapes.py"
    assert from_ray() == RECORDED[installed]


REFUSED = """
import json, sys
from accelhal.cli import main
from accelhal.compat import ray as accelhal_ray

answers = {}
for name, call in {
    "resource_name": lambda: accelhal_ray.resource_name("cpu"),
    "node_resources": accelhal_ray.node_resources,
    "ray_start_arguments": accelhal_ray.ray_start_arguments,
    "torch_config": accelhal_ray.torch_config,
    "device": accelhal_ray.device,
}.items():
    try:
        call()
        answers[name] = "returned"
    except Exception as exc:
        answers[name] = f"{type(exc).__name__}: {exc}"
answers["cli"] = main(["ray-resources"])
answers["imported"] = sorted({m.split(".")[0] for m in sys.modules} & {"ray", "torch"})
print(json.dumps(answers))
"""


@pytest.mark.parametrize("release", ["2.39.0", "3.0.0"])
def test_a_release_outside_the_range_is_refused_before_ray_is_imported(release: str, tmp_path: Path) -> None:
    lay_out(tmp_path, "ray", release)  # found before the installed Ray's
    env = {"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin", "ACCELHAL_ACCELERATOR": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", REFUSED], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    message = (
        f"UnsupportedReleaseError: ray {release} is outside the releases accelhal supports (ray>=2.40.0,<3): "
        "tested from 2.40.0 to 2.60.0; install a release in that range"
    )
    for name in ("resource_name", "node_resources", "ray_start_arguments", "torch_config", "device"):
        assert answers[name] == message, name
    assert answers["cli"] == 2  # the program's usage error, its message on stderr and no traceback
    said = " ".join(done.stderr.split())  # the program wraps its message to the terminal's width
    assert said == "accelhal: error: " + message.split(": ", 1)[1] and "Traceback" not in done.stderr
    assert answers["imported"] == []  # refused before Ray (or torch) was imported
