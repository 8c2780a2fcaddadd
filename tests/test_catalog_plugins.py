"""The built-in backends' catalog plugins and third-party ``BackendsPlugin`` objects, seen through the command.

Each built-in backend is a ``BackendsPlugin`` in ``accelhal_backends.catalog``, named by an entry
point of its own name; a third-party distribution may declare its backends the same way. What a
process sees is checked through ``accelhal list`` or the public API in fresh processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import warm
from tests.conftest import InstallDistribution

BUILT_IN_BACKENDS = {"cpu", "cuda", "xpu", "npu", "hpu", "mlu", "sdaa", "mps", "supa", "musa", "xla"}

ACME_MODULE = """
from accelhal import BackendSpec, Verdict, hookimpl
from accelhal.discovery.hooks import BackendsPlugin
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


def run(args: list[str], tmp_path: Path, site: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m``/``-c`` as a fresh process would run it (forked from the warm interpreter: tests/warm.py).

    It gets its own cache, and ``site`` (a directory of installed distributions) on its path.
    """
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_"))}
    full.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(site or tmp_path), **env)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if args[0] == "-m":
        return warm.run_module(args[1], args[2:], full, sys.executable, timeout=300, cwd=work)
    return warm.run_code(args[1], args[2:], full, sys.executable, timeout=300, cwd=work)


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


def test_a_third_party_distribution_declares_its_backends_as_backends_plugins(
    tmp_path: Path, install_distribution: InstallDistribution
) -> None:
    """One module, an entry point per plugin object; a subclass may implement the op-builder hook too."""
    plugins = {"first": "acme_multi:first", "second": "acme_multi:second", "with_ops": "acme_multi:with_ops"}
    site = install_distribution("acme-multi", {"acme_multi": ACME_MODULE}, plugins).parent
    code = (
        "import accelhal, json\n"
        "from accelhal.discovery.plugins import registry\n"
        "acc = accelhal.get_accelerator()\n"
        "acme = {n: r.plugin for n, r in registry().backends.items() if n.startswith('acme')}\n"
        "print(json.dumps([acc.name, sorted(acme), sorted((p.name, p.value) for p in acme.values()),\n"
        "    [f.detail for f in registry().failures], acc.get_op_builder('AcmeBuilder').__module__]))\n"
    )
    result = run(["-c", code], tmp_path, site, ACCELHAL_ACCELERATOR="acmec")
    assert result.returncode == 0, result.stderr
    chosen, names, plugins, failures, builder_module = json.loads(result.stdout)
    assert (chosen, names, failures, builder_module) == ("acmec", ["acmea", "acmeb", "acmec"], [], "acme_multi")
    assert plugins == [
        ["first", "acme_multi:first"],
        ["second", "acme_multi:second"],
        ["with_ops", "acme_multi:with_ops"],
    ]


def test_a_plugin_object_named_twice_is_reported_as_such_beside_a_plugin_given_no_spec(
    tmp_path: Path, install_distribution: InstallDistribution
) -> None:
    module = (
        "from accelhal import BackendSpec, Verdict\n"
        "from accelhal.discovery.hooks import BackendsPlugin\n"
        "bad = BackendsPlugin('not a spec')\n"
        "shared = BackendsPlugin(BackendSpec(name='acmeshared', device_type='cpu', priority=90, accelerator='x:Y',\n"
        "                                    probe=lambda: Verdict.no_device('none')))\n"
    )
    plugins = {"bad": "acme_odd:bad", "shared": "acme_odd:shared", "shared_again": "acme_odd:shared"}
    site = install_distribution("acme-odd", {"acme_odd": module}, plugins).parent
    code = (
        "import json\n"
        "from accelhal.discovery.plugins import registry\n"
        "print(json.dumps({f.plugin: f.detail for f in registry().failures}))\n"
    )
    result = run(["-c", code], tmp_path, site)
    assert result.returncode == 0, result.stderr
    failures = json.loads(result.stdout)
    assert "register() takes a BackendSpec, got 'not a spec'" in failures["bad"]
    assert "already registered" in failures["shared_again"], failures["shared_again"]
