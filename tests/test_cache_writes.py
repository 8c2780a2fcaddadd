"""accelhal writes its cache files only where they belong: never through a link planted beside them."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from accelhal.compat.deepspeed._hook import write_pth
from accelhal.ops.cache import write_atomically
from accelhal.process.cache_files import read_json, write_json


def plant_links(directory: Path, name: str, victim: Path) -> None:
    """Links to ``victim`` at every name a writer of ``name`` used to take (its pid's, with and without a dot)."""
    for planted in (f"{name}.{os.getpid()}.tmp", f".{name}.{os.getpid()}.tmp"):
        (directory / planted).symlink_to(victim)


WRITERS: dict[str, Callable[[Path], object]] = {
    "json-cache": lambda path: write_json(path, {"format": 1}),
    "op-cache": lambda path: write_atomically(path, "{}"),
}


@pytest.mark.parametrize("writer", WRITERS)
def test_a_link_planted_where_a_temporary_file_goes_is_not_written_through(writer: str, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    cache = tmp_path / "cache"
    cache.mkdir()
    plant_links(cache, "entry.json", victim)
    WRITERS[writer](cache / "entry.json")
    assert victim.read_text() == "precious"
    assert (cache / "entry.json").read_text() in ('{"format": 1}', "{}")
    left = sorted(p.name for p in cache.iterdir() if not p.is_symlink())
    assert left == ["entry.json"], left  # no temporary file left behind


def test_the_pth_file_is_not_written_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    site = tmp_path / "site-packages"
    site.mkdir()
    plant_links(site, "zz-accelhal-deepspeed.pth", victim)
    written = write_pth(site)
    assert victim.read_text() == "precious" and "ACCELHAL_DEEPSPEED" in written.read_text()


def test_a_shared_file_follows_the_umask_and_a_private_one_is_its_owners(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        write_atomically(tmp_path / "shared.json", "{}")
        write_json(tmp_path / "private.json", {})
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "shared.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
    assert read_json(tmp_path / "private.json") == {}


def test_a_directory_that_cannot_take_the_file_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "entry.json").mkdir()  # a directory where the file should go: the rename fails
    assert write_json(tmp_path / "entry.json", {}) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry.json"]
