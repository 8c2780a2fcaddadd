"""Lightning's releases: the adapter's table knows every release of its range, and refuses the others.

``tests/data/lightning-shapes.json`` holds the real shape of every release from the floor to
the newest, for ``lightning`` and ``pytorch_lightning`` (``scripts/record_lightning_shapes.py``
reads their wheels). The table must give each release its recorded shape; that the installed
release, read from its imported objects, equals its recorded row is checked in
``test_lightning.py`` (in its training process, which imports both packages anyway).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from accelhal.compat._releases import release_key
from accelhal.compat.lightning._releases import SHAPES, SUPPORTED, SUPPORTED_PL
from tests.compat.lightning_shapes import recorded
from tests.distributions import lay_out

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {"lightning.pytorch": "lightning", "pytorch_lightning": "pytorch_lightning"}


def unknown(releases: dict[str, dict[str, Any]]) -> list[str]:
    """The releases whose recorded shape the table does not give them."""
    return [release for release, shape in releases.items() if SHAPES.shape_for(release).record() != shape]


def test_the_table_gives_every_recorded_release_its_shape() -> None:
    data = recorded()
    assert set(data) == {SUPPORTED.distribution, SUPPORTED_PL.distribution}
    for distribution, releases in data.items():
        ordered = sorted(releases, key=release_key)
        assert (ordered[0], ordered[-1]) == (SUPPORTED.floor, SUPPORTED.newest), distribution
        assert unknown(releases) == [], f"{distribution}: run scripts/record_lightning_shapes.py and extend SHAPES"
    assert data["lightning"] == data["pytorch_lightning"]  # one code base under two names
    assert (SUPPORTED.floor, SUPPORTED.newest, SUPPORTED.below) == (SUPPORTED_PL.floor, SUPPORTED_PL.newest, "3")


def test_a_shape_the_table_does_not_know_is_found() -> None:
    newest = recorded()["lightning"][SUPPORTED.newest]
    abstract = json.loads(json.dumps(newest))
    abstract["accelerator"]["pin_memory"] = {"kind": "method", "abstract": True, "signature": "(self, tensor)"}
    gpu = {**newest, "gpu_used": {"cuda": "CUDAAccelerator"}}
    moved = {**newest, "attributes": newest["attributes"][1:]}
    releases = {SUPPORTED.newest: newest, "2.7.0": newest, "2.7.1": abstract, "2.8.0": gpu, "2.9.0": moved}
    assert unknown(releases) == ["2.7.1", "2.8.0", "2.9.0"]


REFUSE = """
import json, sys
from accelhal.compat import lightning
out = []
for package, root in json.loads(sys.argv[1]):
    sys.path.insert(0, root)
    for call in (lightning.register, lightning.accelerator_class, lightning.ddp_strategy):
        try:
            call(package)
            out.append("accepted")
        except Exception as exc:
            out.append(f"{type(exc).__name__}: {exc}")
    sys.path.remove(root)
out.append(sorted(m for m in sys.modules if m.split(".")[0] in ("lightning", "pytorch_lightning", "torch")))
print(json.dumps(out))
"""


def test_a_release_outside_the_range_is_refused_before_lightning_is_imported(tmp_path: Path) -> None:
    """The installed release is read from a dist-info placed first on the path, as an older install would be."""
    cases = [("lightning.pytorch", "2.3.3"), ("lightning.pytorch", "3.0.0"), ("pytorch_lightning", "2.3.3")]
    roots = []
    for package, release in cases:
        root = tmp_path / f"{package}-{release}"
        lay_out(root, DISTRIBUTIONS[package], release)
        roots.append((package, str(root)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", REFUSE, json.dumps(roots)], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    *errors, imported = json.loads(done.stdout)
    expected = [
        "lightning 2.3.3 is outside the releases accelhal supports (lightning>=2.4.0,<3)",
        "lightning 3.0.0 is outside the releases accelhal supports (lightning>=2.4.0,<3)",
        "pytorch_lightning 2.3.3 is outside the releases accelhal supports (pytorch_lightning>=2.4.0,<3)",
    ]
    detail = ": tested from 2.4.0 to 2.6.6; install a release in that range"
    assert errors == [f"UnsupportedReleaseError: {message}{detail}" for message in expected for _ in range(3)]
    assert imported == []  # nothing registered: Lightning (and torch) never imported
