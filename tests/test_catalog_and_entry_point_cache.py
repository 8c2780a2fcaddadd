"""The built-in catalog plugins and the entry-point cache's recorded parses, tried from outside.

Each built-in backend is a ``BackendsPlugin`` in ``accelhal_backends.catalog``, named by an entry
point of its own name; a third-party distribution may declare its backends the same way. The
entry-point cache (``accelhal/entry_points.py``) serves a distribution's entry points from the
parse it recorded while that ``entry_points.txt`` holds the recorded text. What a process sees
is checked through the ``accelhal`` command or ``find`` in fresh processes, and the cache file
is damaged the ways a crash, a hand edit or an old tool could leave it.
"""

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

from accelhal.entry_points import find
from tests import warm

BUILT_IN_BACKENDS = {"cpu", "cuda", "xpu", "npu", "hpu", "mlu", "sdaa", "mps", "supa", "musa", "xla"}

ACME_MODULE = """
from accelhal import BackendSpec, Verdict, hookimpl
from accelhal.hookspecs import BackendsPlugin
from accelhal.ops.builder import OpBuilder
from accelhal_backends.cpu.accelerator import CpuAccelerator


def probe():
    return Verdict.available("the host CPU under another name")


def spec(name):
    return BackendSpec(name=name, device_type="cpu", priority=90, accelerator=f"acme_multi:{name.capitalize()}",
                       probe=probe, requires=("torch",), comm_backend="gloo")


class Acmea(CpuAccelerator):
    _name = "acmea"


class Acmeb(CpuAccelerator):
    _name = "acmeb"


class Acmec(CpuAccelerator):
    _name = "acmec"


class AcmeBuilder(OpBuilder):
    NAME = "acme_op"


class WithOps(BackendsPlugin):
    @hookimpl
    def accelhal_register_op_builders(self, register):
        register("acmec", AcmeBuilder)


first = BackendsPlugin(spec("acmea"))
second = BackendsPlugin(spec("acmeb"))
with_ops = WithOps(spec("acmec"))
"""


def as_tuples(points: list[metadata.EntryPoint]) -> list[tuple[str, str, str]]:
    return [(ep.name, ep.value, ep.group) for ep in points]


def reference(group: str) -> list[tuple[str, str, str]]:
    return as_tuples(list(metadata.entry_points(group=group)))


def make_dist(site: Path, name: str, version: str, entry_points: str) -> Path:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)
    return info


def age(path: Path, seconds: int = 60) -> None:
    """Back-date ``path`` to a time that is not a whole second, so that the cache may use and record it."""
    past = time.time_ns() - seconds * 1_000_000_000
    past -= past % 1_000_000_000 - 123_456_789
    os.utime(path, ns=(past, past))


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


def the_record(home: Path, dist_name: str) -> tuple[Path, dict[str, Any], str]:
    """The one cache file, its data and the key of ``dist_name``'s recorded parse in it."""
    (path,) = cache_files(home)
    data = json.loads(path.read_text())
    (key,) = [d for d in data["parsed"] if Path(d).name.startswith(f"{dist_name}-")]
    return path, data, key


def run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python <args>`` in a fresh process, with its own cache and the test's site directory on the path."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_"))}
    full.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path / "site"), **env)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if args[0] == "-m":  # forked from the warm interpreter where that is the same as a fresh one (tests/warm.py)
        return warm.run_module(args[1], args[2:], full, sys.executable, timeout=300, cwd=work)
    if args[0] == "-c":
        return warm.run_code(args[1], args[2:], full, sys.executable, timeout=300, cwd=work)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=full, cwd=work, check=False)


def listed(tmp_path: Path, **env: str) -> dict[str, Any]:
    result = run(["-m", "accelhal", "list", "--json"], tmp_path, **env)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


# ------------------------------------------------------------------------ the catalog's plugins


def test_each_built_in_backend_comes_from_the_catalog_plugin_named_after_it(tmp_path: Path) -> None:
    """``ACCELHAL_BLOCK_PLUGINS=npu`` holds back npu only because the entry point named npu registers npu."""
    data = listed(tmp_path)
    built_in = {b["name"]: b for b in data["backends"] if b["source"] == "built-in"}
    assert set(built_in) == BUILT_IN_BACKENDS
    assert {name: b["plugin"] for name, b in built_in.items()} == {name: name for name in BUILT_IN_BACKENDS}
    plugins = {p["name"]: p for p in data["plugins"] if p["builtin"]}
    for name in BUILT_IN_BACKENDS:
        assert (plugins[name]["value"], plugins[name]["state"]) == (f"accelhal_backends.catalog:{name}", "loaded")
    assert data["failures"] == []


def test_a_built_in_plugin_is_held_back_by_its_own_name_and_by_no_third_party_setting(tmp_path: Path) -> None:
    data = listed(
        tmp_path,
        ACCELHAL_BLOCK_PLUGINS="npu,sdaa",
        ACCELHAL_DISABLE_PLUGIN_AUTOLOAD="1",
        ACCELHAL_PLUGINS="something-else",
    )
    assert {b["name"] for b in data["backends"] if b["source"] == "built-in"} == BUILT_IN_BACKENDS - {"npu", "sdaa"}
    states = {p["name"]: p["state"] for p in data["plugins"] if p["builtin"]}
    assert {name: states[name] for name in BUILT_IN_BACKENDS} == {
        name: "blocked" if name in ("npu", "sdaa") else "loaded" for name in BUILT_IN_BACKENDS
    }


def test_a_third_party_distribution_declares_its_backends_as_backends_plugins(tmp_path: Path) -> None:
    """One module, an entry point per plugin object; a subclass may implement the op-builder hook too."""
    site = tmp_path / "site"
    make_dist(
        site,
        "acme-multi",
        "1.0",
        "[accelhal]\nfirst = acme_multi:first\nsecond = acme_multi:second\nwith_ops = acme_multi:with_ops\n",
    )
    (site / "acme_multi.py").write_text(ACME_MODULE)
    age(site)
    code = (
        "import accelhal, json\n"
        "from accelhal.plugins import registry\n"
        "acc = accelhal.get_accelerator()\n"
        "acme = {n: r.plugin for n, r in registry().backends.items() if n.startswith('acme')}\n"
        "print(json.dumps([acc.name, sorted(acme), sorted((p.name, p.value) for p in acme.values()),\n"
        "    [f.detail for f in registry().failures], acc.get_op_builder('AcmeBuilder').__module__]))\n"
    )
    result = run(["-c", code], tmp_path, ACCELHAL_ACCELERATOR="acmec")
    assert result.returncode == 0, result.stderr
    chosen, names, plugins, failures, builder_module = json.loads(result.stdout)
    assert (chosen, names, failures, builder_module) == ("acmec", ["acmea", "acmeb", "acmec"], [], "acme_multi")
    assert plugins == [
        ["first", "acme_multi:first"],
        ["second", "acme_multi:second"],
        ["with_ops", "acme_multi:with_ops"],
    ]


def test_a_plugin_object_named_twice_is_reported_as_such_beside_a_plugin_given_no_spec(tmp_path: Path) -> None:
    site = tmp_path / "site"
    make_dist(
        site,
        "acme-odd",
        "1.0",
        "[accelhal]\nbad = acme_odd:bad\nshared = acme_odd:shared\nshared_again = acme_odd:shared\n",
    )
    (site / "acme_odd.py").write_text(
        "from accelhal import BackendSpec, Verdict\n"
        "from accelhal.hookspecs import BackendsPlugin\n"
        "bad = BackendsPlugin('not a spec')\n"
        "shared = BackendsPlugin(BackendSpec(name='acmeshared', device_type='cpu', priority=90, accelerator='x:Y',\n"
        "                                    probe=lambda: Verdict.no_device('none')))\n"
    )
    age(site)
    code = (
        "import json\n"
        "from accelhal.plugins import registry\n"
        "print(json.dumps({f.plugin: f.detail for f in registry().failures}))\n"
    )
    result = run(["-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    failures = json.loads(result.stdout)
    assert "register() takes a BackendSpec, got 'not a spec'" in failures["bad"]
    assert "already registered" in failures["shared_again"], failures["shared_again"]


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


def damage_record_length(data: dict[str, Any], key: str) -> None:
    data["parsed"][key].append(0)


def damage_unlisted(data: dict[str, Any], key: str) -> None:
    data["parsed"]["/nowhere/acme_ghost-1.0.dist-info"] = [0, 0, [["ghost", "acme_ghost"]]]


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
        damage_record_length,
        damage_unlisted,
    ],
    ids=lambda f: f.__name__.removeprefix("damage_"),
)
def test_a_damaged_recorded_parse_is_ignored_and_healed(
    cache_home: Path, site: Path, damage: Callable[[dict[str, Any], str], None]
) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site / "acme_one-1.0.dist-info" / "entry_points.txt")
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


@pytest.mark.parametrize("pairs", [[[1, None]], [[{"a": 1}, ["b"]]]], ids=["int-and-null", "dict-and-list"])
def test_a_recorded_parse_of_what_are_not_strings_is_ignored_and_healed(
    cache_home: Path, site: Path, pairs: list[list[Any]]
) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site / "acme_one-1.0.dist-info" / "entry_points.txt")
    age(site)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert as_tuples(find("accelhal")) == expected
    path, data, key = the_record(cache_home, "acme_one")
    good = data["parsed"][key]
    data["parsed"][key] = [*good[:-1], pairs]
    path.write_text(json.dumps(data))
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["parsed"][key] == good


def test_a_damaged_record_of_accelhal_itself_cannot_break_selection_in_a_fresh_process(tmp_path: Path) -> None:
    """docs/concepts.md: "No cached state can make a later process fail or crash"."""
    (tmp_path / "site").mkdir()
    code = "import accelhal; print(accelhal.get_accelerator().name)"
    first = run(["-c", code], tmp_path)
    assert first.stdout.split() == ["cpu"], first.stderr
    path, data, key = the_record(tmp_path / "cache", "accelhal")
    data["parsed"][key][-1] = [[name, None if name == "cpu" else value] for name, value in data["parsed"][key][-1]]
    path.write_text(json.dumps(data))
    again = run(["-c", code], tmp_path)
    assert again.returncode == 0 and again.stdout.split() == ["cpu"], again.stderr[-2000:]


def test_an_edit_of_another_size_is_seen_though_the_modification_time_is_kept(cache_home: Path, site: Path) -> None:
    info = make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    entry_points = info / "entry_points.txt"
    age(entry_points)
    age(site)
    importlib.invalidate_caches()
    assert [ep.value for ep in find("accelhal") if ep.name == "one"] == ["acme_one"]
    before = entry_points.stat()
    entry_points.write_text("[accelhal]\none = acme_other\n")
    os.utime(entry_points, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [ep.value for ep in find("accelhal") if ep.name == "one"] == ["acme_other"]
    assert [ep.value for ep in find("accelhal") if ep.name == "one"] == ["acme_other"]  # the healed record


def test_a_same_size_edit_that_keeps_the_modification_time_is_seen(cache_home: Path, site: Path) -> None:
    info = make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    entry_points = info / "entry_points.txt"
    age(entry_points)
    age(site)
    importlib.invalidate_caches()
    assert [ep.value for ep in find("accelhal") if ep.name == "one"] == ["acme_one"]
    the_record(cache_home, "acme_one")  # the parse is recorded: the next hit may serve it
    before = entry_points.stat()
    entry_points.write_text("[accelhal]\none = acme_two\n")  # the same size
    os.utime(entry_points, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert entry_points.stat().st_size == before.st_size
    assert [ep.value for ep in metadata.entry_points(group="accelhal") if ep.name == "one"] == ["acme_two"]
    assert [ep.value for ep in find("accelhal") if ep.name == "one"] == ["acme_two"]


def test_a_deeply_nested_cache_file_is_ignored_and_replaced(cache_home: Path, site: Path) -> None:
    make_dist(site, "acme-one", "1.0", "[accelhal]\none = acme_one\n")
    age(site)
    importlib.invalidate_caches()
    expected = reference("accelhal")
    assert as_tuples(find("accelhal")) == expected
    (path,) = cache_files(cache_home)
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert as_tuples(find("accelhal")) == expected
    assert json.loads(path.read_text())["directories"]
