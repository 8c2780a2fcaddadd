"""The Accelerate and transformers releases the adapter supports: every recorded release's shape, and refusals.

``tests/data/accelerate-shapes.json`` holds what the adapter touches, read from the wheel of
every release in both ranges (``scripts/record_accelerate_shapes.py``). The adapter's tables
must give each release its recorded shape; the installed releases, as loaded, must be what was
recorded for them; and ``install()`` refuses an Accelerate outside its range, or a member in a shape
its release does not have, before anything is patched; a transformers outside its range stops only
the Trainer, where it chooses its device.
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
from tests.distributions import lay_out
from tests.venvs import prefix_install

DATA = REPO / "tests" / "data" / "accelerate-shapes.json"
RECORDED: dict[str, dict[str, dict[str, str]]] = json.loads(DATA.read_text(encoding="utf-8"))
TABLES: dict[str, tuple[ReleaseRange, ShapeTable[Shape]]] = {
    "accelerate": (SUPPORTED, SHAPES),
    "transformers": (SUPPORTED_TRANSFORMERS, TRANSFORMERS_SHAPES),
}

needs_both = pytest.mark.skipif(
    importlib.util.find_spec("accelerate") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the accelerate extra and transformers: pip install '.[test]' in the clone",
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


LOADED_THEN_CHANGED = """
import json
from importlib import metadata
import accelerate.state
import accelhal.compat.accelerate as adapter
from accelhal.compat.accelerate import _shape
from accelhal.compat.accelerate._releases import MEMBERS, TRANSFORMERS_MEMBERS
from accelhal.errors import ContractError

print(json.dumps({
    "versions": {name: metadata.version(name) for name in ("accelerate", "transformers")},
    "loaded": _shape.loaded(MEMBERS + TRANSFORMERS_MEMBERS),
    "installed": _shape.installed(TRANSFORMERS_MEMBERS),
}))

def _prepare_backend(self, cpu=False, backend=None):
    return backend, None

accelerate.state.PartialState._prepare_backend = _prepare_backend
try:
    adapter.install()
except ContractError as exc:
    print(exc)
print(adapter.is_installed(), accelerate.state.PartialState._prepare_backend is _prepare_backend)
"""
"""The installed releases' shapes as loaded; then ``install()`` with a member changed (one process for both)."""


@pytest.fixture(scope="module")
def loaded_then_changed(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    script = tmp_path_factory.mktemp("changed") / "changed.py"  # a file: the changed member's source is read
    script.write_text(LOADED_THEN_CHANGED, encoding="utf-8")
    done = warm.run_script(script, [], child_environment(), sys.executable, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


@needs_both
def test_the_installed_releases_as_loaded_are_what_was_recorded_for_them(loaded_then_changed: list[str]) -> None:
    found = json.loads(loaded_then_changed[0])
    for distribution, release in found["versions"].items():
        recorded = RECORDED[distribution][release]
        assert {key: found["loaded"][key] for key in recorded} == recorded, distribution
    assert found["installed"] == {key: found["loaded"][key] for key in found["installed"]}


@needs_both
def test_a_member_in_another_shape_than_its_release_has_is_refused_by_name(loaded_then_changed: list[str]) -> None:
    message, after = loaded_then_changed[1:]
    assert message == (
        f"accelerate {metadata.version('accelerate')} is not the shape accelhal.compat.accelerate knows for it: "
        "accelerate.state:PartialState._prepare_backend is 'function (self, cpu, backend)', not "
        "'function (self, cpu, sagemaker_dp, backend)' (tested from 1.0.0 to 1.15.0; docs/accelerate.md)"
    )
    assert after == "False True"  # nothing patched, the changed member left as it was


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
def test_accelerate_outside_its_range_is_refused_before_anything_is_imported_or_patched(tmp_path: Path) -> None:
    script = tmp_path / "refused.py"
    script.write_text(REFUSED, encoding="utf-8")
    cases = ["accelerate==0.34.2", "accelerate==2.0.0"]
    done = warm.run_script(script, cases, child_environment(), sys.executable, timeout=120)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    for case in cases:
        release = case.split("==")[1]
        assert found[release] == (
            f"accelerate {release} is outside the releases accelhal supports (accelerate>=1.0.0,<2): "
            "tested from 1.0.0 to 1.15.0; install a release in that range"
        )
    assert found["patched"] is False
    assert "accelerate" not in found["imported"] and "transformers" not in found["imported"]


OLD_TRANSFORMERS = ("transformers==4.40.2", "tokenizers==0.19.1", "huggingface-hub==0.23.5")
"""A transformers below the floor, with the tokenizers and huggingface-hub releases it accepts."""

TRANSFORMERS_OUTSIDE = """
import json
import torch
import accelhal.compat.accelerate as adapter
from accelerate import Accelerator
from accelhal.errors import UnsupportedReleaseError
import transformers

out = {"transformers": transformers.__version__, "installed": adapter.install("cpu").name}
accelerator = Accelerator()  # a plain Accelerate loop, which never touches the Trainer
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
model, optimizer = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
losses = []
for _ in range(3):
    loss = model(torch.ones(2, 4, device=accelerator.device)).pow(2).mean()
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
out["loop"] = {"device": str(accelerator.device), "type": accelerator.distributed_type.value, "losses": losses}
from transformers import TrainingArguments

try:
    TrainingArguments(output_dir=".", report_to=[])
    out["trainer"] = "constructed"
except UnsupportedReleaseError as exc:
    out["trainer"] = [exc.framework, exc.installed, exc.supported, str(exc)]
adapter.uninstall()
out["after_uninstall"] = str(TrainingArguments(output_dir=".", report_to=[], use_cpu=True).device)
print(json.dumps(out))
"""


@needs_both
def test_transformers_outside_its_range_refuses_only_the_trainer_at_its_point_of_use(tmp_path: Path) -> None:
    """A real transformers 4.40.2 first on the path: Accelerate's loop runs installed, ``TrainingArguments`` refuses."""
    prefix = prefix_install("transformers-4.40", *OLD_TRANSFORMERS)
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    env = child_environment()
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    script = tmp_path / "outside.py"
    script.write_text(TRANSFORMERS_OUTSIDE, encoding="utf-8")
    done = warm.run_script(script, [], env, sys.executable, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert (found["transformers"], found["installed"]) == ("4.40.2", "cpu")
    loop = found["loop"]
    assert (loop["device"], loop["type"]) == ("cpu", "NO") and loop["losses"][-1] < loop["losses"][0]
    assert found["trainer"] == [
        "transformers",
        "4.40.2",
        ">=4.46.0,<6",
        "transformers 4.40.2 is outside the releases accelhal supports (transformers>=4.46.0,<6): tested from "
        "4.46.0 to 5.23.0; the Trainer's device choice on accelhal needs a release in that range (Accelerate's "
        "own use is not affected)",
    ]
    assert found["after_uninstall"] == "cpu"  # transformers' own code is back


def test_the_runner_refuses_in_one_line_and_names_its_usage(tmp_path: Path) -> None:
    lay_out(tmp_path, "accelerate", "0.34.2")
    env = child_environment(PYTHONPATH=f"{tmp_path}:{REPO}")
    runner = [sys.executable, "-m", "accelhal.compat.accelerate"]
    refused = subprocess.run([*runner, "train.py"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (refused.returncode, refused.stdout) == (2, "")  # as every refusal of a release (cli.md)
    assert refused.stderr.splitlines() == [
        "accelhal.compat.accelerate: UnsupportedReleaseError: accelerate 0.34.2 is outside the releases accelhal "
        "supports (accelerate>=1.0.0,<2): tested from 1.0.0 to 1.15.0; install a release in that range"
    ]
    bare = subprocess.run(runner, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (bare.returncode, bare.stderr) == (
        2,
        "usage: python -m accelhal.compat.accelerate SCRIPT [ARGS] | -m MODULE [ARGS]\n",
    )
