"""Record the shape of what the Accelerate adapter touches in every Accelerate and transformers release of its ranges.

    python scripts/record_accelerate_shapes.py                               # both ranges, every release
    python scripts/record_accelerate_shapes.py --releases transformers==4.46.0 accelerate==1.3.0

For each release on the package index from the floor to the newest of
``accelhal.compat.accelerate._releases.SUPPORTED`` (Accelerate) and ``SUPPORTED_TRANSFORMERS``
(yanked ones included: ``==`` installs them), ``pip download --no-deps --only-binary :all:`` fetches its wheel (kept in
``--cache``), and the modules of ``MEMBERS``/``TRANSFORMERS_MEMBERS`` are read from it with
:mod:`ast` (``accelhal.compat.accelerate._shape.from_files``). The result is written to
``tests/data/accelerate-shapes.json`` (``{distribution: {release: {member: shape}}}``), which
``tests/compat/test_accelerate_releases.py`` checks the adapter's tables and the installed
releases against.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from package_index import pip, releases_in_range  # noqa: E402

from accelhal.compat._releases import release_key  # noqa: E402
from accelhal.compat.accelerate._releases import (  # noqa: E402
    MEMBERS,
    SUPPORTED,
    SUPPORTED_TRANSFORMERS,
    TRANSFORMERS_MEMBERS,
)
from accelhal.compat.accelerate._shape import Member, from_files  # noqa: E402

DATA = REPO / "tests" / "data" / "accelerate-shapes.json"
RANGES = {
    r.distribution: (r, members)
    for r, members in ((SUPPORTED, MEMBERS), (SUPPORTED_TRANSFORMERS, TRANSFORMERS_MEMBERS))
}


def wheel(distribution: str, release: str, cache: Path) -> Path:
    """The release's wheel, downloaded into ``cache`` unless it is there."""
    pattern = f"{distribution}-{release}-*.whl"
    if not sorted(cache.glob(pattern)):
        pip("download", "--no-deps", "--only-binary", ":all:", f"{distribution}=={release}", "-d", str(cache))
    found = sorted(cache.glob(pattern))
    if not found:
        raise SystemExit(f"pip download left no {pattern} in {cache}")
    return found[0]


def read_release(archive: Path, members: Sequence[Member]) -> dict[str, str]:
    """The shapes of ``members`` in the wheel ``archive``."""
    with zipfile.ZipFile(archive) as wheel_file:
        return from_files(lambda path: wheel_file.read(path).decode("utf-8"), members)


def main(argv: list[str] | None = None) -> int:
    """Record the releases; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="*", metavar="DIST==RELEASE", help="only these (merged into the file)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "accelhal-shapes")
    args = parser.parse_args(argv)
    data = json.loads(DATA.read_text(encoding="utf-8")) if DATA.is_file() and args.releases else {}
    if args.releases:
        wanted = [tuple(spec.split("==", 1)) for spec in args.releases]
    else:
        wanted = [
            (name, release) for name, (supported, _) in RANGES.items() for release in releases_in_range(supported)
        ]
    for name, release in wanted:
        if name not in RANGES:
            raise SystemExit(f"{name}: not one of {sorted(RANGES)}")
        cache = args.cache / name
        cache.mkdir(parents=True, exist_ok=True)
        data.setdefault(name, {})[release] = read_release(wheel(name, release, cache), RANGES[name][1])
        print(f"{name} {release}", flush=True)
    out: dict[str, object] = {"source": "the wheel of each release, read by scripts/record_accelerate_shapes.py"}
    for name in RANGES:
        out[name] = dict(sorted(data.get(name, {}).items(), key=lambda item: release_key(item[0])))
    DATA.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {DATA.relative_to(REPO)} ({', '.join(f'{n}: {len(data.get(n, {}))} releases' for n in RANGES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
