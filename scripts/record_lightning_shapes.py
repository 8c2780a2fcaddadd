"""Record the shape of Lightning in every release of the adapter's range, for both distributions.

    python scripts/record_lightning_shapes.py                      # every release from the floor to the newest
    python scripts/record_lightning_shapes.py --releases 2.5.2     # only these (merged into the data file)

For each release on the package index from ``SUPPORTED.floor`` to ``SUPPORTED.newest``
(``pip index versions lightning``), ``pip download --no-deps`` fetches the wheels of
``lightning``, and of ``pytorch_lightning`` with its ``lightning_fabric`` (kept in ``--cache``),
and :func:`tests.compat.lightning_shapes.from_sources` reads the accelerator ABC, the
registry, ``_log_device_info`` and the classes whose attributes the adapter sets with
:mod:`ast`. The result is written to ``tests/data/lightning-shapes.json``, which
``tests/compat/test_lightning_releases.py`` checks the adapter's ``SHAPES`` table and the
installed Lightning against.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from package_index import pip, releases_in_range  # noqa: E402

from accelhal.compat._releases import release_key  # noqa: E402
from accelhal.compat.lightning._releases import SUPPORTED  # noqa: E402
from tests.compat.lightning_shapes import DATA, ROOTS, SOURCES, Record, from_sources  # noqa: E402

WHEELS = {"lightning": ("lightning",), "pytorch_lightning": ("pytorch_lightning", "lightning_fabric")}
"""The wheels each distribution's shape is read from."""


def wheel(name: str, release: str, cache: Path) -> Path:
    """The wheel of ``name`` at ``release``, downloaded into ``cache`` unless it is there."""
    pattern = f"{name}-{release}-py3-none-any.whl"
    if not (cache / pattern).is_file():
        pip("download", "--no-deps", "--only-binary", ":all:", f"{name}=={release}", "-d", str(cache))
    if not (cache / pattern).is_file():
        raise SystemExit(f"pip download left no {pattern} in {cache}")
    return cache / pattern


def read_release(distribution: str, release: str, cache: Path) -> Record:
    """The shape of ``distribution`` at ``release``, from its wheels."""
    archives = [zipfile.ZipFile(wheel(name, release, cache)) for name in WHEELS[distribution]]

    def read(key: str) -> str:
        part, path = SOURCES[key]
        member = f"{ROOTS[distribution][part]}/{path}"
        for archive in archives:
            if member in archive.namelist():
                return archive.read(member).decode("utf-8")
        raise SystemExit(f"no {member} in the {distribution} {release} wheels")

    return from_sources(read)


def main(argv: list[str] | None = None) -> int:
    """Record the releases; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="*", help="record only these releases (default: the whole range)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "accelhal-shapes" / "lightning")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    releases = args.releases or releases_in_range(SUPPORTED)
    merge = DATA.is_file() and args.releases
    data = json.loads(DATA.read_text(encoding="utf-8")) if merge else {"releases": {d: {} for d in WHEELS}}
    for release in releases:
        for distribution in WHEELS:
            data["releases"][distribution][release] = read_release(distribution, release, args.cache)
        print(f"{release}: recorded {', '.join(WHEELS)}")
    data["source"] = "each release's wheels, read by scripts/record_lightning_shapes.py"
    for distribution, rows in data["releases"].items():
        data["releases"][distribution] = dict(sorted(rows.items(), key=lambda item: (release_key(item[0]), item[0])))
    DATA.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {DATA.relative_to(REPO)} ({len(releases)} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
