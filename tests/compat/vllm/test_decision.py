"""When the bridge is vLLM's platform: its probe, with each kind of backend active, beside vLLM's own choice."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from accelhal.compat.vllm import PLATFORM_QUALNAME, SERVED_BY_VLLM, decide_for
from tests.compat.engines import INFO
from tests.compat.vllm import vendor_plugin
from tests.compat.vllm.runs import device_site, environment, run_code
from tests.sharing import RunCache

RESOLVE = """
import json
from vllm.platforms import resolve_current_platform_cls_qualname
from accelhal.compat.vllm import decide
try:
    decision = decide()
    found = {"rule": decision.rule, "reason": decision.reason, "backend": decision.backend}
except RuntimeError as exc:  # vLLM up to 0.31 resolves its platform while the bridge imports vllm.plugins
    found = {"rule": "vllm-refused", "reason": str(exc), "backend": None}
try:
    chosen = resolve_current_platform_cls_qualname()
except RuntimeError as exc:
    chosen = "refused: " + str(exc)
print(json.dumps({"chosen": chosen, **found}))
"""
"""vLLM's own resolution of its platform, in a fresh process, and the bridge's decision there."""


def resolve(site: Path | None = None, **env: str) -> dict[str, str]:
    done = run_code(RESOLVE, environment(site=site, **env))
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def vendor_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vendor_plugin.install(tmp_path_factory.mktemp("vendor-site"))


def test_on_cpu_vllm_keeps_its_own_platform() -> None:
    found = resolve(ACCELHAL_ACCELERATOR="cpu")
    assert found["chosen"] == "vllm.platforms.cpu.CpuPlatform"
    assert found["rule"] == "host"
    assert "ACCELHAL_VLLM_PLATFORM=on" in found["reason"]


def test_forced_on_cpu_the_bridge_is_chosen() -> None:
    found = resolve(ACCELHAL_ACCELERATOR="cpu", ACCELHAL_VLLM_PLATFORM="on")
    assert (found["chosen"], found["rule"]) == (PLATFORM_QUALNAME, "forced")


def test_forced_off_vllm_keeps_its_own_platform_on_a_device_it_does_not_know(run_cache: RunCache) -> None:
    found = resolve(device_site(run_cache), ACCELHAL_VLLM_PLATFORM="off")
    assert (found["chosen"], found["rule"]) == ("vllm.platforms.cpu.CpuPlatform", "disabled")


def test_a_device_vllm_does_not_know_gets_the_bridge(run_cache: RunCache) -> None:
    found = resolve(device_site(run_cache))
    assert (found["chosen"], found["rule"], found["backend"]) == (PLATFORM_QUALNAME, "device", "testdev")


def test_the_vendors_own_plugin_is_left_alone(run_cache: RunCache, vendor_site: Path, tmp_path: Path) -> None:
    """vLLM refuses two answering out-of-tree plugins: the bridge stays out, and vLLM starts on the vendor's."""
    site = tmp_path / "site"
    site.symlink_to(vendor_site)
    both = environment(site=site)
    both["PYTHONPATH"] = f"{device_site(run_cache)}:{both['PYTHONPATH']}"
    done = run_code(RESOLVE, both)
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["chosen"] == vendor_plugin.QUALNAME
    assert found["rule"] == "vendor-plugin" and "vendor" in found["reason"]


def test_forced_beside_the_vendors_plugin_vllm_refuses_naming_both(run_cache: RunCache, vendor_site: Path) -> None:
    """Forced, the bridge answers beside the vendor's plugin: vLLM refuses both, by name (up to 0.31, while the
    vendor's module imports vLLM's CPU platform, which resolves the platform on import)."""
    env = environment(site=vendor_site, ACCELHAL_VLLM_PLATFORM="on")
    env["PYTHONPATH"] = f"{device_site(run_cache)}:{env['PYTHONPATH']}"
    done = run_code(RESOLVE, env)
    said = done.stderr if done.returncode else json.loads(done.stdout.splitlines()[-1])["chosen"]
    assert "Only one platform plugin can be activated" in said
    assert "'accelhal'" in said and "'vendor'" in said
    if not done.returncode:
        assert "VLLM_PLUGINS" in json.loads(done.stdout.splitlines()[-1])["reason"]


def test_vllm_plugins_leaving_the_vendor_out_gives_the_bridge(run_cache: RunCache, vendor_site: Path) -> None:
    env = environment(site=vendor_site, VLLM_PLUGINS="accelhal")
    env["PYTHONPATH"] = f"{device_site(run_cache)}:{env['PYTHONPATH']}"
    found = json.loads(run_code(RESOLVE, env).stdout.splitlines()[-1])
    assert (found["chosen"], found["rule"]) == (PLATFORM_QUALNAME, "device")


PROBE_WITH = """
import importlib, json
import accelhal
from accelhal.selection import registry
from accelhal.compat.vllm import platform_plugin, decide
spec = registry().backends[{name!r}].spec
module, _, name = spec.accelerator.partition(":")
accelhal.set_accelerator(getattr(importlib.import_module(module), name)())
print(json.dumps({{"answer": platform_plugin(), "rule": decide().rule}}))
"""


@pytest.mark.parametrize("backend", ["cuda", "xpu"])
@pytest.mark.parametrize("forced", ["auto", "on"])
def test_on_gpus_vllm_keeps_its_own_platform_even_forced(backend: str, forced: str) -> None:
    """The probe itself, with the cuda (NVIDIA and ROCm builds alike) or xpu backend active."""
    done = run_code(PROBE_WITH.format(name=backend), environment(ACCELHAL_VLLM_PLATFORM=forced))
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"answer": None, "rule": "served-by-vllm"}
    if forced == "on":
        assert "stays out although ACCELHAL_VLLM_PLATFORM=on" in done.stderr


@pytest.mark.parametrize("name", ["cuda", "xpu", "xla", "cpu", "npu", "hpu", "mlu", "sdaa", "supa", "musa", "mps"])
@pytest.mark.parametrize("forced", [False, True])
def test_each_built_in_backend_decides_by_its_device_type(name: str, forced: bool) -> None:
    catalog = importlib.import_module("accelhal_backends.catalog")
    spec = next(s for plugin in vars(catalog).values() for s in getattr(plugin, "specs", ()) if s.name == name)
    decision = decide_for(spec.device_type, spec.name, forced, [])
    if spec.device_type in SERVED_BY_VLLM:
        assert (decision.active, decision.rule) == (False, "served-by-vllm")
    elif spec.device_type == "cpu":
        assert decision.active is forced
    else:
        assert (decision.active, decision.rule) == (True, "forced" if forced else "device")
    assert name not in ("cuda", "xpu", "xla") or not decision.active


def test_a_wrong_value_of_the_variable_stops_vllm_naming_it() -> None:
    """vLLM swallows what a platform plugin raises: the bridge answers, and building its platform raises."""
    code = "from vllm.platforms import current_platform\ncurrent_platform.device_type"
    done = run_code(code, environment(ACCELHAL_VLLM_PLATFORM="maybe"))
    assert done.returncode != 0
    assert "ConfigurationError: ACCELHAL_VLLM_PLATFORM='maybe' is not one of auto, on, off" in done.stderr


def test_accelhal_info_names_the_platform_vllm_chooses(run_cache: RunCache) -> None:
    """``accelhal info --json`` agrees with vLLM's own resolution: CpuPlatform on cpu, the bridge on the test device."""
    on_cpu = json.loads(run_code(INFO, environment(ACCELHAL_ACCELERATOR="cpu")).stdout)["vllm"]
    assert on_cpu["platform"] == "vllm.platforms.cpu.CpuPlatform" and on_cpu["bridge"].startswith("stays out: ")
    on_device = json.loads(run_code(INFO, environment(site=device_site(run_cache))).stdout)["vllm"]
    assert on_device["platform"] == PLATFORM_QUALNAME and on_device["bridge"].startswith("answers: ")


ASK = """
import logging, sys
logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
from accelhal.compat.vllm import platform_plugin
print(platform_plugin())
"""
"""What vLLM's plugin loader asks in each of its processes, with the 'accelhal' loggers shown at WARNING."""


def test_a_forced_backend_nobody_registers_is_a_warning_while_vllm_runs_on_its_own_platform() -> None:
    done = run_code(ASK, environment(ACCELHAL_ACCELERATOR="nosuchdev"))
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.splitlines()[-1] == "None"
    assert "WARNING accelhal.compat.vllm accelhal's vLLM platform stays out:" in done.stderr
    assert "unknown accelerator 'nosuchdev'" in done.stderr


def test_the_bridge_asking_on_a_machine_without_accelerators_prints_no_fallback_line() -> None:
    done = run_code(ASK, environment())
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.splitlines()[-1] == "None"
    assert "no accelerator qualified" not in done.stderr, done.stderr
