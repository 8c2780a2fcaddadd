"""Record what the Ray adapter touches in every Ray release of its range.

    python scripts/record_ray_shapes.py                      # every release from the floor to the newest
    python scripts/record_ray_shapes.py --releases 2.51.0    # only these (merged into the data file)

For each release on the package index from ``SUPPORTED.floor`` to ``SUPPORTED.newest``
(``pip index versions ray``), ``pip download --no-deps`` fetches its wheel for this machine
(about 70 MB) into a temporary directory; the files the adapter's record needs are read from
the zip without unpacking it (:func:`tests.compat.ray_shapes.from_source`), and the wheel is
deleted before the next release is fetched. The result is written to
``tests/data/ray-shapes.json``, which ``tests/compat/test_ray_releases.py`` checks the
adapter's ``SHAPES`` table, the documented resources and the installed Ray against.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from package_index import pip, releases_in_range  # noqa: E402

from accelhal.compat._releases import release_key  # noqa: E402
from accelhal.compat.ray._releases import SUPPORTED  # noqa: E402
from tests.compat.ray_shapes import DATA, from_source  # noqa: E402


def record_release(release: str) -> dict[str, Any]:
    """The record of ``release``, read from its wheel (downloaded into a temporary directory, then deleted)."""
    with tempfile.TemporaryDirectory(prefix="ray-wheel-") as directory:
        pip("download", "--no-deps", "--only-binary", ":all:", f"{SUPPORTED.distribution}=={release}", "-d", directory)
        wheels = sorted(Path(directory).glob(f"ray-{release}-*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"pip download left {[w.name for w in wheels]} for ray {release}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            names = set(wheel.namelist())

            def read(path: str) -> str | None:
                return wheel.read(path).decode("utf-8") if path in names else None

            return from_source(read)


def main(argv: list[str] | None = None) -> int:
    """Record the releases; returns the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--releases", nargs="*", help="record only these releases (default: the whole range)")
    args = parser.parse_args(argv)
    releases = args.releases or releases_in_range(SUPPORTED)
    recorded: dict[str, Any] = json.loads(DATA.read_text()) if args.releases and DATA.exists() else {}
    for release in releases:
        recorded[release] = record_release(release)
        print(
            f"ray {release}: Ray Train v2 {recorded[release]['train_v2']}, "
            f"{len(recorded[release]['managers'])} accelerator managers",
            flush=True,
        )
    ordered = dict(sorted(recorded.items(), key=lambda item: release_key(item[0])))
    DATA.write_text(json.dumps(ordered, indent=1) + "\n")
    print(f"wrote {len(ordered)} releases to {DATA.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
