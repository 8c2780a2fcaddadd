"""accelhal.discovery.entry_points.find gives importlib.metadata's answer, from its cache only when that is safe."""

from __future__ import annotations

import copy
import importlib
import importlib.metadata as metadata
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from accelhal.discovery.entry_points import find, name_and_version
from tests.distributions import lay_out


def as_tuples(points: list[metadata.EntryPoint]) -> list[tuple[str, str, str]]:
    return [(ep.name, ep.value, ep.group) for ep in points]


def reference(group: str) -> list[tuple[str, str, str]]:
    return as_tuples(list(metadata.entry_points(group=group)))


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
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n\n[console_scripts]\nacme = acme_one:main\n")
    lay_out(site, "acme-two", "2.0", "[console_scripts]\ntwo = acme_two:main\n")
    lay_out(site, "acme-three", "3.0", "[accelhal]\nthree = acme_three:plugin\nalso = acme_three.more\n")
    lay_out(site, "acme-four", "4.0", None)
    lay_out(site, "acme-five", "5.0", "[ accelhal ]\nfive = acme_five\n")  # importlib.metadata ignores it
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
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    assert [ep.name for ep in find("accelhal") if ep.value.startswith("acme")] == ["one"]
    assert cache_files(cache_home)
    lay_out(site, "acme-new", "1.0", "[accelhal]\nnew = acme_new\n")
    importlib.invalidate_caches()
    assert [ep.name for ep in find("accelhal") if ep.value.startswith("acme")] == ["one", "new"]


def test_an_edit_to_a_cached_plugins_entry_points_is_seen(cache_home: Path, site: Path) -> None:
    info = lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    find("accelhal")
    assert cache_files(cache_home)
    (info / "entry_points.txt").write_text("[accelhal]\nrenamed = acme_one\n")
    assert [ep.name for ep in find("accelhal") if ep.value == "acme_one"] == ["renamed"]
    assert [ep.name for ep in find("accelhal") if ep.value == "acme_one"] == ["renamed"]  # the healed record
    (info / "entry_points.txt").write_text("[accelhal]\nnewname = acme_one\n")  # the same size, a later time
    found = [ep for ep in find("accelhal") if ep.value == "acme_one"]
    assert [ep.name for ep in found] == ["newname"]
    assert found[0].dist is not None and found[0].dist.name == "acme-one"
    before = (info / "entry_points.txt").stat()
    (info / "entry_points.txt").write_text("[accelhal]\nnewnamf = acme_one\n")  # the same size and time (cp -p)
    os.utime(info / "entry_points.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [ep.name for ep in find("accelhal") if ep.value == "acme_one"] == ["newnamf"]


def test_entry_points_served_from_the_cache_carry_their_distribution(cache_home: Path, site: Path) -> None:
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\nsecond = acme_one.more:plugin\n")
    age(site)
    importlib.invalidate_caches()
    first = find("accelhal")
    assert cache_files(cache_home)
    again = find("accelhal")
    assert as_tuples(again) == as_tuples(first) == reference("accelhal")
    acme = [ep for ep in again if ep.value.startswith("acme_one")]
    assert [(ep.dist.name, ep.dist.version) for ep in acme if ep.dist is not None] == [("acme-one", "1.0")] * 2
    assert acme[1].attr == "plugin" and acme[1].module == "acme_one.more"


def test_a_fresh_whole_second_modification_time_is_never_cached(cache_home: Path, site: Path) -> None:
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    whole_second = time.time_ns() // 1_000_000_000 * 1_000_000_000  # as a coarse file system records it
    os.utime(site, ns=(whole_second, whole_second))
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert cache_files(cache_home) == []


def test_a_busy_directory_with_fine_modification_times_still_caches(cache_home: Path, site: Path) -> None:
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")  # modified just now, to the nanosecond
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert len(cache_files(cache_home)) == 1
    lay_out(site, "acme-two", "1.0", "[accelhal]\ntwo = acme_two\n")
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert ("two", "acme_two", "accelhal") in as_tuples(find("accelhal"))


def test_the_first_distribution_of_a_name_wins_as_in_importlib_metadata(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    lay_out(first, "acme-dup", "2.0", "[console_scripts]\nx = y:z\n")  # shadows the one below
    lay_out(second, "acme-dup", "1.0", "[accelhal]\ndup = acme_dup\n")
    lay_out(second, "acme-other", "1.0", "[accelhal]\nother = acme_other\n")
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
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    expected = as_tuples(find("accelhal"))
    (path,) = cache_files(cache_home)
    path.write_text("{not json")
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["directories"]


def test_an_unwritable_cache_directory_only_costs_a_scan(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file" / "cache"))
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert as_tuples(find("accelhal")) == reference("accelhal")


@pytest.mark.parametrize("value", ["relative/cache", " "])
def test_a_relative_or_blank_xdg_cache_home_is_ignored(
    value: str, site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the XDG Base Directory specification says: both caches go to ``~/.cache`` instead."""
    from accelhal.process.settings import OpsSettings

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    monkeypatch.chdir(tmp_path)
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    assert as_tuples(find("accelhal")) == reference("accelhal")
    assert len(cache_files(tmp_path / "home" / ".cache")) == 1
    assert OpsSettings.from_environ().cache == str(tmp_path / "home" / ".cache" / "accelhal" / "ops")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "site"]


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


def poison(path: Path, directories: object) -> None:
    """Keep the file's signature (so it looks current) but replace what it says."""
    data = json.loads(path.read_text())
    data["directories"] = directories
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "directories",
    [
        [],
        ["/nonexistent/acme_one-1.0.dist-info"],
        ["{elsewhere}/acme_one-1.0.dist-info"],  # a real distribution, but not in a sys.path entry
        ["{site}/acme_one-1.0.dist-info", "{site}/acme_one-1.0.dist-info"],  # twice
        ["{site}/acme_none-1.0.dist-info"],  # exists, but carries no entry point of the group
        ["{site}/acme_one-1.0.dist-info", "{first}/acme_two-1.0.dist-info"],  # not in sys.path order
        "{site}",  # not a list
    ],
    ids=["empty", "missing", "elsewhere", "twice", "no-group", "out-of-order", "not-a-list"],
)
def test_a_well_formed_but_wrong_entry_is_ignored_and_rewritten(
    cache_home: Path, site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directories: list[str] | str
) -> None:
    first = tmp_path / "first"
    lay_out(first, "acme-two", "1.0", "[accelhal]\ntwo = acme_two\n")
    monkeypatch.syspath_prepend(str(first))
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    lay_out(site, "acme-none", "1.0", "[console_scripts]\nnone = acme_none:main\n")
    lay_out(tmp_path / "elsewhere", "acme-one", "1.0", "[accelhal]\nstray = acme_stray\n")
    for path in (first, site):
        age(path)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert as_tuples(find("accelhal")) == expected
    (path,) = cache_files(cache_home)
    good = json.loads(path.read_text())["directories"]
    fill = {"site": site, "elsewhere": tmp_path / "elsewhere", "first": first}
    poison(
        path, directories.format(**fill) if isinstance(directories, str) else [d.format(**fill) for d in directories]
    )
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["directories"] == good


@pytest.mark.parametrize("keep", ["nothing", "only-the-plugin"])
def test_an_entry_without_accelhal_itself_cannot_break_selection_in_a_fresh_process(
    cache_home: Path, site: Path, keep: str
) -> None:
    """Before, every later process failed with 'no backend is available, not even the cpu fallback'."""
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one_not_installed\n")
    age(site)
    code = "import accelhal; print(accelhal.get_accelerator().name)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELHAL_")}
    env.update(XDG_CACHE_HOME=str(cache_home), PYTHONPATH=str(site))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert first.stdout.split() == ["cpu"], first.stderr
    written = cache_files(cache_home)
    assert written
    for path in written:
        good = json.loads(path.read_text())["directories"]
        assert any("acme_one" in d for d in good)
        poison(path, [d for d in good if "acme_one" in d] if keep == "only-the-plugin" else [])
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 0 and again.stdout.split() == ["cpu"], again.stderr
    assert all(len(json.loads(p.read_text())["directories"]) == len(good) for p in written)  # the real answer again


def test_name_and_version_agree_with_the_full_metadata_parse(tmp_path: Path) -> None:
    """Every installed distribution, and the shapes the header reader must hand to the full parse."""
    odd = {
        "folded": "Metadata-Version: 2.1\nName: folded\nVersion:\n  1.0\n",  # a value on a continuation line
        "lower": "metadata-version: 2.1\nname: lower\nversion: 2.0\n",  # headers are case-insensitive
        "late": "Metadata-Version: 2.1\nName: late\n\nVersion: 3.0\n",  # after the blank line: the body
    }
    dists: list[metadata.Distribution] = list(metadata.distributions())
    for name, text in odd.items():
        info = tmp_path / f"{name}-0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(text)
        dists.append(metadata.PathDistribution(info))
    assert len(dists) > len(odd) + 10
    for dist in dists:
        meta = dist.metadata
        assert name_and_version(dist) == (meta["Name"] or "?", meta["Version"] or "?"), dist


def the_record(home: Path, dist_name: str) -> tuple[Path, dict[str, Any], str]:
    """The one cache file, its data and the key of ``dist_name``'s recorded parse in it."""
    (path,) = cache_files(home)
    data = json.loads(path.read_text())
    (key,) = [d for d in data["parsed"] if Path(d).name.startswith(f"{dist_name}-")]
    return path, data, key


# ------------------------------------------------------------------ the recorded parses of the cache


def damage_parsed(data: dict[str, Any], key: str) -> None:
    data["parsed"] = [1, 2]


def damage_record(data: dict[str, Any], key: str) -> None:
    data["parsed"][key] = {"mtime": 1}


def damage_pairs(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = ["one", "acme_one"]


def damage_pair_length(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = [["one", "acme_one", "extra"]]


def damage_empty_pairs(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = []


def damage_text(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][0] = "[accelhal]\none = acme_elsewhere\n"  # a record of another text


def damage_text_type(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][0] = 590


def damage_pair_of_fragments(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = [["one", "acme"]]  # both strings occur in the text, but no line says one = acme


def damage_invented_pair(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = [*data["parsed"][key][-1], ["evil", "acme_evil"]]  # not in the text


def damage_pair_of_null(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = [[1, None]]


def damage_pair_of_containers(data: dict[str, Any], key: str) -> None:
    data["parsed"][key][-1] = [[{"a": 1}, ["b"]]]


def damage_record_length(data: dict[str, Any], key: str) -> None:
    data["parsed"][key].append(0)


def damage_unlisted(data: dict[str, Any], key: str) -> None:
    data["parsed"]["/nowhere/acme_ghost-1.0.dist-info"] = [
        "[accelhal]\nghost = acme_ghost\n",
        [["ghost", "acme_ghost"]],
    ]


@pytest.mark.parametrize(
    "damage",
    [
        damage_parsed,
        damage_record,
        damage_pairs,
        damage_pair_length,
        damage_empty_pairs,
        damage_text,
        damage_text_type,
        damage_invented_pair,
        damage_pair_of_fragments,
        damage_pair_of_null,
        damage_pair_of_containers,
        damage_record_length,
        damage_unlisted,
    ],
    ids=lambda f: f.__name__.removeprefix("damage_"),
)
def test_a_damaged_recorded_parse_is_ignored_and_healed(
    cache_home: Path, site: Path, damage: Callable[[dict[str, Any], str], None]
) -> None:
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert as_tuples(find("accelhal")) == expected
    path, data, key = the_record(cache_home, "acme_one")
    good = copy.deepcopy(data["parsed"][key])
    damage(data, key)
    path.write_text(json.dumps(data))
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["parsed"][key] == good
    assert as_tuples(find("accelhal")) == expected


def test_a_damaged_record_of_accelhal_itself_cannot_break_selection_in_a_fresh_process(
    cache_home: Path, tmp_path: Path
) -> None:
    """A null value recorded for cpu once made every later process fail: 'not even the cpu fallback'."""
    code = "import accelhal; print(accelhal.get_accelerator().name)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELHAL_")}
    env.update(XDG_CACHE_HOME=str(cache_home))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert first.stdout.split() == ["cpu"], first.stderr
    path, data, key = the_record(cache_home, "accelhal")
    data["parsed"][key][-1] = [[name, None if name == "cpu" else value] for name, value in data["parsed"][key][-1]]
    path.write_text(json.dumps(data))
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.split() == ["cpu"], again.stderr[-2000:]
    assert json.loads(path.read_text())["parsed"][key][-1] != data["parsed"][key][-1]  # the record was rewritten


def test_a_deeply_nested_cache_file_is_ignored_and_replaced(cache_home: Path, site: Path) -> None:
    lay_out(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert as_tuples(find("accelhal")) == expected
    (path,) = cache_files(cache_home)
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["directories"]
