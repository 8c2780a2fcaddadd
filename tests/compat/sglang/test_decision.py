"""When the bridge is SGLang's platform: its probe, with each kind of backend active, beside SGLang's own choice.

SGLang resolves its platform from the environment each time ``_resolve_platform`` runs (first while
it imports): one fresh process per set of installed distributions runs SGLang's own resolution under
each setting.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from accelhal.compat.sglang import PLATFORM_QUALNAME, SERVED_BY_SGLANG, decide_for
from tests.compat.engines import INFO, device_site, run_code
from tests.compat.sglang import vendor_plugin
from tests.compat.sglang.runs import environment
from tests.sharing import RunCache

BRIDGE = PLATFORM_QUALNAME.replace(":", ".").replace("AccelhalPlatform", "")

RESOLVE = """
import json, logging, os
from sglang.srt import platforms
from accelhal.compat.sglang import decide
found = {{}}
for name, env in {settings!r}:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        kind = type(platforms._resolve_platform())
        chosen = kind.__module__ + "." + kind.__qualname__
    except Exception as exc:
        chosen = "refused: " + type(exc).__name__ + ": " + str(exc)
    try:
        decision = decide()
        found[name] = {{"chosen": chosen, "rule": decision.rule, "reason": decision.reason,
                       "backend": decision.backend}}
    except Exception as exc:
        found[name] = {{"chosen": chosen, "rule": "raised", "reason": str(exc), "backend": None}}
    os.environ.clear()
    os.environ.update(saved)
print(json.dumps(found))
"""
"""SGLang's own resolution of its platform under each named setting, and the bridge's decision there."""


def resolve(settings: list[tuple[str, dict[str, str]]], *sites: Path, **env: str) -> dict[str, dict[str, Any]]:
    environ = environment(**env)
    environ["PYTHONPATH"] = ":".join([*map(str, sites), environ["PYTHONPATH"]])
    done = run_code(RESOLVE.format(settings=settings), environ)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def on_cpu() -> dict[str, dict[str, Any]]:
    """accelhal's cpu backend."""
    settings = [
        ("auto", {}),
        ("cpu-engine", {"SGLANG_USE_CPU_ENGINE": "1"}),
        ("cpu-engine-forced", {"SGLANG_USE_CPU_ENGINE": "1", "ACCELHAL_SGLANG_PLATFORM": "on"}),
    ]
    return resolve(settings, ACCELHAL_ACCELERATOR="cpu")


@pytest.fixture(scope="module")
def on_device(run_cache: RunCache, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The test tree's PrivateUse1 device (accelhal's generic backend), a vendor's SGLang plugin installed too."""
    vendor = vendor_plugin.install(tmp_path_factory.mktemp("vendor-site"))
    settings = [
        ("vendor", {}),
        ("vendor-left-out", {"SGLANG_PLUGINS": "accelhal"}),
        ("off", {"SGLANG_PLUGINS": "accelhal", "ACCELHAL_SGLANG_PLATFORM": "off"}),
        ("forced", {"ACCELHAL_SGLANG_PLATFORM": "on"}),
        ("chosen", {"SGLANG_PLATFORM": "accelhal"}),
    ]
    return resolve(settings, device_site(run_cache), vendor)


def test_a_wrong_value_of_the_variable_stops_sglang_naming_it() -> None:
    """SGLang swallows what activate() raises: the bridge answers, and importing its platform raises (SGLang
    resolves its platform while it imports)."""
    done = run_code("import sglang", environment(ACCELHAL_ACCELERATOR="cpu", ACCELHAL_SGLANG_PLATFORM="maybe"))
    assert done.returncode != 0
    assert "ConfigurationError: ACCELHAL_SGLANG_PLATFORM='maybe' is not one of auto, on, off" in done.stderr


def test_on_cpu_without_sglangs_cpu_engine_the_bridge_serves(on_cpu: dict[str, dict[str, Any]]) -> None:
    """SGLang would fall back to its base platform, which serves nothing: the bridge answers."""
    found = on_cpu["auto"]
    assert (found["chosen"], found["rule"], found["backend"]) == (BRIDGE + "AccelhalCpuPlatform", "device", "cpu")


def test_sglangs_cpu_engine_keeps_its_own_platform_unless_forced(on_cpu: dict[str, dict[str, Any]]) -> None:
    assert on_cpu["cpu-engine"]["chosen"] == "sglang.srt.platforms.cpu.CpuSRTPlatform"
    assert on_cpu["cpu-engine"]["rule"] == "host"
    assert "ACCELHAL_SGLANG_PLATFORM=on" in on_cpu["cpu-engine"]["reason"]
    forced = on_cpu["cpu-engine-forced"]
    assert (forced["chosen"], forced["rule"]) == (BRIDGE + "AccelhalCpuPlatform", "forced")


def test_the_vendors_own_plugin_is_left_alone(on_device: dict[str, dict[str, Any]]) -> None:
    found = on_device["vendor"]
    assert found["chosen"] == vendor_plugin.QUALNAME.replace(":", ".")
    assert (found["rule"], found["backend"]) == ("vendor-plugin", "testdev") and "vendor" in found["reason"]


def test_a_device_sglang_does_not_know_gets_the_bridge(on_device: dict[str, dict[str, Any]]) -> None:
    found = on_device["vendor-left-out"]
    assert (found["chosen"], found["rule"], found["backend"]) == (
        BRIDGE + "AccelhalTestdevPlatform",
        "device",
        "testdev",
    )
    assert on_device["chosen"]["chosen"] == BRIDGE + "AccelhalTestdevPlatform"


def test_forced_off_sglang_keeps_its_own_fallback(on_device: dict[str, dict[str, Any]]) -> None:
    found = on_device["off"]
    assert (found["chosen"], found["rule"]) == ("sglang.srt.platforms.interface.SRTPlatform", "disabled")


def test_forced_beside_the_vendors_plugin_sglang_refuses_naming_both(on_device: dict[str, dict[str, Any]]) -> None:
    found = on_device["forced"]
    assert found["chosen"].startswith("refused: RuntimeError: Multiple platform plugins activated")
    assert "'accelhal'" in found["chosen"] and "'vendor'" in found["chosen"]
    assert found["rule"] == "forced" and "SGLANG_PLATFORM" in found["reason"]


@pytest.mark.parametrize("name", ["cuda", "xpu", "xla", "cpu", "npu", "hpu", "mlu", "sdaa", "supa", "musa", "mps"])
@pytest.mark.parametrize("forced", [False, True])
def test_each_built_in_backend_decides_by_its_device_type(name: str, forced: bool) -> None:
    catalog = importlib.import_module("accelhal_backends.catalog")
    spec = next(s for plugin in vars(catalog).values() for s in getattr(plugin, "specs", ()) if s.name == name)
    decision = decide_for(spec.device_type, spec.name, forced, [])
    if spec.device_type in SERVED_BY_SGLANG:
        assert (decision.active, decision.rule) == (False, "served-by-sglang")
    else:
        assert (decision.active, decision.rule) == (True, "forced" if forced else "device")
    assert decide_for("cpu", "cpu", forced, [], cpu_engine=True).active is forced
    assert name not in ("cuda", "xpu", "npu", "musa", "mps") or not decision.active


def test_accelhal_info_names_the_platform_sglang_chooses(run_cache: RunCache) -> None:
    """``accelhal info --json`` agrees with SGLang's own resolution: its CPU platform when asked for, else ours."""
    engine = json.loads(run_code(INFO, environment(ACCELHAL_ACCELERATOR="cpu", SGLANG_USE_CPU_ENGINE="1")).stdout)
    assert engine["sglang"]["platform"] == "sglang.srt.platforms.cpu.CpuSRTPlatform"
    assert engine["sglang"]["bridge"].startswith("stays out: ")
    bridged = environment()
    bridged["PYTHONPATH"] = f"{device_site(run_cache)}:{bridged['PYTHONPATH']}"
    on_device = json.loads(run_code(INFO, bridged).stdout)["sglang"]
    assert on_device["platform"] == BRIDGE + "AccelhalTestdevPlatform" and on_device["bridge"].startswith("answers: ")
