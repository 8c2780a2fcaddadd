"""accelhal.entry_points.find gives importlib.metadata's answer, from its cache only when that is safe."""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import json
import os
import time
from pathlib import Path

import pytest

from accelhal.entry_points import find


def as_tuples(points: list[metadata.EntryPoint]) -> list[tuple[str, str, str]]:
    return [(ep.name, ep.value, ep.group) for ep in points]


def reference(group: str) -> list[tuple[str, str, str]]:
    return as_tuples(list(metadata.entry_points(group=group)))


def make_dist(site: Path, name: str, version: str, entry_points: str | None) -> Path:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    return info


def age(path: Path, seconds: float = 60) -> None:
    """Back-date ``path`` so that it is outside the racy window and the cache may be used."""
    past = time.time() - seconds
    os.utime(path, (past, past))


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    return path


def cache_files(home: Path) -> list[Path]:
    return sorted((home / "accelhal").glob("entry-points-*.json")) if (home / "accelhal").is_dir() else []


def test_same_answer_as_importlib_metadata_with_and_without_the_cache(cache_home: Path, site: Path) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n\n[console_scripts]\nacme = acme_one:main\n")
    make_dist(site, "acme-two", "2.0", "[console_scripts]\ntwo = acme_two:main\n")
    make_dist(site, "acme-three", "3.0", "[accelhal]\nthree = acme_three:plugin\nalso = acme_three.more\n")
    make_dist(site, "acme-four", "4.0", None)
    make_dist(site, "acme-five", "5.0", "[ accelhal ]\nfive = acme_five\n")  # importlib.metadata ignores it
    age(site)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert ("one", "acme_one", "accelhal") in expected and ("also", "acme_three.more", "accelhal") in expected
    assert ("five", "acme_five", "accelhal") not in expected
    assert as_tuples(find("accelhal")) == expected  # scans, writes the cache
    assert len(cache_files(cache_home)) == 1
    assert as_tuples(find("accelhal")) == expected  # served from the cache
    assert as_tuples(find("console_scripts")) == reference("console_scripts")


def test_an_installation_after_caching_is_seen(cache_home: Path, site: Path) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    assert [ep.name for ep in find("accelhal") if ep.value.startswith("acme")] == ["one"]
    assert cache_files(cache_home)
    make_dist(site, "acme-new", "1.0", "[accelhal]\nnew = acme_new\n")
    importlib.invalidate_caches()
    assert [ep.name for ep in find("accelhal") if ep.value.startswith("acme")] == ["one", "new"]


def test_an_edit_to_a_cached_plugins_entry_points_is_seen(cache_home: Path, site: Path) -> None:
    info = make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    find("accelhal")
    assert cache_files(cache_home)
    (info / "entry_points.txt").write_text("[accelhal]\nrenamed = acme_one\n")
    assert [ep.name for ep in find("accelhal") if ep.value == "acme_one"] == ["renamed"]


def test_a_fresh_whole_second_modification_time_is_never_cached(cache_home: Path, site: Path) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    whole_second = time.time_ns() // 1_000_000_000 * 1_000_000_000  # as a coarse file system records it
    os.utime(site, ns=(whole_second, whole_second))
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert cache_files(cache_home) == []


def test_a_busy_directory_with_fine_modification_times_still_caches(cache_home: Path, site: Path) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")  # modified just now, to the nanosecond
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert len(cache_files(cache_home)) == 1
    make_dist(site, "acme-two", "1.0", "[accelhal]\ntwo = acme_two\n")
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert ("two", "acme_two", "accelhal") in as_tuples(find("accelhal"))


def test_the_first_distribution_of_a_name_wins_as_in_importlib_metadata(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    make_dist(first, "acme-dup", "2.0", "[console_scripts]\nx = y:z\n")  # shadows the one below
    make_dist(second, "acme-dup", "1.0", "[accelhal]\ndup = acme_dup\n")
    make_dist(second, "acme-other", "1.0", "[accelhal]\nother = acme_other\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    age(first)
    age(second)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert ("other", "acme_other", "accelhal") in expected and ("dup", "acme_dup", "accelhal") not in expected
    assert as_tuples(find("accelhal")) == expected
    assert as_tuples(find("accelhal")) == expected


def test_a_damaged_cache_file_is_ignored_and_replaced(cache_home: Path, site: Path) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    expected = as_tuples(find("accelhal"))
    (path,) = cache_files(cache_home)
    path.write_text("{not json")
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["directories"]


def test_an_unwritable_cache_directory_only_costs_a_scan(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/not/allowed")
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert not Path("relative").exists()


def test_the_cache_directory_keeps_only_the_most_recent_files(cache_home: Path, site: Path) -> None:
    """One file per distinct sys.path: old ones are pruned so the directory cannot grow without bound."""
    directory = cache_home / "accelhal"
    directory.mkdir(parents=True)
    for i in range(40):
        stale = directory / f"entry-points-stale{i:02d}.json"
        stale.write_text("{}")
        age(stale, seconds=1000 - i)
    age(site)
    importlib.invalidate_caches()
    find("accelhal")  # a miss for this sys.path: scans and writes its file
    kept = cache_files(cache_home)
    assert len(kept) == 32
    assert not (directory / "entry-points-stale00.json").exists()  # the oldest went
    assert (directory / "entry-points-stale39.json").exists()  # the newest stale one stayed
    assert any(not p.name.startswith("entry-points-stale") for p in kept)  # and the file just written
