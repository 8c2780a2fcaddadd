"""Record the shape of DeepSpeed's accelerator class in every release of the adapter's range.

    python scripts/record_deepspeed_shapes.py                      # every release from the floor to the newest
    python scripts/record_deepspeed_shapes.py --releases 0.17.6    # only these (merged into the data file)

For each release on the package index from ``SUPPORTED.floor`` to ``SUPPORTED.newest``
(``pip index versions deepspeed``), ``pip download --no-deps --no-binary :all:`` fetches its
sdist (kept in ``--cache``), and ``deepspeed/accelerator/abstract_accelerator.py`` is read
with :mod:`ast` (:func:`tests.compat.deepspeed_shapes.from_source`): every member of
``DeepSpeedAccelerator``, its kind, whether it is abstract and its signature; and so is
``deepspeed/accelerator/cpu_accelerator.py``'s ``CPU_Accelerator`` (``cpu_from_source``). The result is
written to ``tests/data/deepspeed-shapes.json``, which ``tests/compat/test_deepspeed_releases.py``
checks the adapter's ``SHAPES`` table and the installed DeepSpeed against.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from package_index import pip, releases_in_range  # noqa: E402

from accelhal.compat._releases import release_key  # noqa: E402
from accelhal.compat.deepspeed._releases import SUPPORTED  # noqa: E402
from tests.compat.deepspeed_shapes import CPU_SOURCE, DATA, SOURCE, cpu_from_source, from_source  # noqa: E402


def sdist(release: str, cache: Path) -> Path:
    """The release's sdist, downloaded into ``cache`` unless it is there."""
    name = SUPPORTED.distribution
    existing = sorted(cache.glob(f"{name}-{release}.tar.gz"))
    if not existing:
        pip("download", "--no-deps", "--no-binary", ":all:", f"{name}=={release}", "-d", str(cache))
        existing = sorted(cache.glob(f"{name}-{release}.tar.gz"))
    if not existing:
        raise SystemExit(f"pip download left no {name}-{release}.tar.gz in {cache}")
    return existing[0]


def read_release(archive: Path) -> tuple[dict[str, object], dict[str, object]]:
    """The recorded shapes of the release in ``archive``: ``DeepSpeedAccelerator``'s and ``CPU_Accelerator``'s."""
    found = []
    with tarfile.open(archive) as tar:
        for path in (SOURCE, CPU_SOURCE):
            member = next((m for m in tar.getmembers() if m.name.endswith("/" + path)), None)
            if member is None:
                raise SystemExit(f"{archive.name} has no {path}")
            handle = tar.extractfile(member)
            assert handle is not None
            found.append(handle.read().decode("utf-8"))
    return dict(from_source(found[0])), dict(cpu_from_source(found[1]))


def main(argv: list[str] | None = None) -> int:
    """Record the releases; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="*", help="record only these releases (default: the whole range)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "accelhal-shapes" / "deepspeed")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    releases = args.releases or releases_in_range(SUPPORTED)
    data = json.loads(DATA.read_text(encoding="utf-8")) if DATA.is_file() and args.releases else {"releases": {}}
    data.setdefault("cpu", {})
    for release in releases:
        data["releases"][release], data["cpu"][release] = read_release(sdist(release, args.cache))
        print(f"{release}: {len(data['releases'][release])} members, CPU_Accelerator {len(data['cpu'][release])}")
    data["source"] = (
        f"{SOURCE} (releases) and {CPU_SOURCE} (cpu) of each release's sdist, read by "
        "scripts/record_deepspeed_shapes.py"
    )
    for key in ("releases", "cpu"):
        data[key] = dict(sorted(data[key].items(), key=lambda item: release_key(item[0])))
    DATA.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {DATA.relative_to(REPO)} ({len(data['releases'])} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
