"""Looking op builders up: built-ins, plugins through the hook, unknown names, broken plugins."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from ops_helpers import run_python

import accelhal
from accelhal.errors import ConfigurationError, PluginError, UnsupportedFeatureError
from accelhal.ops import NotImplementedBuilder, OpBuilder, op_builders
from accelhal.process.settings import OpsSettings
from accelhal.selection import registry


def test_unknown_name_gives_a_not_implemented_builder_that_names_op_and_backend() -> None:
    accelerator = accelhal.get_accelerator()
    cls = accelerator.get_op_builder("NoSuchOpBuilder")
    assert issubclass(cls, NotImplementedBuilder)
    assert cls.__name__ == "NoSuchOpBuilder"
    builder = accelerator.create_op_builder("NoSuchOpBuilder")
    assert builder.is_compatible() is False  # a plain bool, as in DeepSpeed
    verdict = builder.compatibility()
    assert not verdict
    assert "'cpu'" in verdict.reason and "FusedAdamWBuilder" in verdict.reason  # says what does exist
    with pytest.raises(UnsupportedFeatureError) as info:
        builder.load()
    assert info.value.backend == "cpu"
    assert "'NoSuchOpBuilder'" in str(info.value)
    assert isinstance(info.value, NotImplementedError)  # DeepSpeed code catching NotImplementedError keeps working


def test_the_builtin_fused_adamw_is_found_per_backend() -> None:
    cpu_builder = accelhal.get_accelerator().get_op_builder("FusedAdamWBuilder")
    assert cpu_builder.__module__ == "accelhal_backends.builtin_ops.cpu"
    assert issubclass(cpu_builder, OpBuilder)
    assert op_builders("cuda")["FusedAdamWBuilder"].__module__ == "accelhal_backends.builtin_ops.cuda"
    assert cpu_builder().is_compatible() is True  # c++ and ninja are here
    assert "ninja" in cpu_builder().compatibility().reason


def test_a_plugin_registered_with_the_manager_contributes_a_builder_lazily_and_once() -> None:
    plugin = importlib.import_module("sample_op_plugin")
    plugin.calls.clear()
    manager = registry().manager
    assert manager is not None
    manager.register(plugin, name="sample-op-plugin")
    assert plugin.calls == []  # registering does not call the hook: the first lookup does
    found = accelhal.get_accelerator().get_op_builder("TinyAnswerBuilder")
    assert found.__module__ == "tiny_ops"
    assert accelhal.get_accelerator().get_op_builder("TinyAnswerBuilder") is found
    assert plugin.calls == ["called"]  # cached after the first lookup
    assert "TinyAnswerBuilder" not in op_builders("cuda")  # registered for cpu only


def test_a_plugin_whose_hook_raises_is_reported_and_skipped() -> None:
    from broken_op_plugin import Junk, Raising

    manager = registry().manager
    assert manager is not None
    manager.register(Raising(), name="raising-plugin")
    manager.register(Junk(), name="junk-plugin")
    assert "FusedAdamWBuilder" in op_builders("cpu")  # the others still count
    failures = {f.plugin: f for f in registry().failures if f.stage == "op-builders"}
    assert "the sample plugin's hook is broken" in failures["raising-plugin"].detail
    assert "needs an OpBuilder subclass" in failures["junk-plugin"].detail


def test_strict_mode_raises_on_a_plugin_whose_hook_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from broken_op_plugin import Raising

    monkeypatch.setenv("ACCELHAL_STRICT", "1")
    accelhal.reset_accelerator()
    manager = registry().manager
    assert manager is not None
    manager.register(Raising(), name="raising-plugin")
    with pytest.raises(PluginError, match="hook is broken"):
        accelhal.get_accelerator().get_op_builder("FusedAdamWBuilder")
    with pytest.raises(PluginError, match="hook is broken"):  # every lookup, not only the first
        accelhal.get_accelerator().get_op_builder("FusedAdamWBuilder")


def test_builtin_ops_plugin_imports_no_torch() -> None:
    code = "import sys, accelhal_backends.builtin_ops as b; b.accelhal_register_op_builders(lambda *a: None); "
    code += "print('torch' in sys.modules)"
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def _tiny_builder(root: Path, source: str, flags: list[str]) -> OpBuilder:
    class Keyed(OpBuilder):
        NAME = "keyed"

        def source_root(self) -> Path:
            return root

        def sources(self) -> list[str]:
            return ["op.cpp"]

        def cxx_args(self) -> list[str]:
            return flags

    (root / "op.cpp").write_text(source)
    return Keyed()


def test_the_cache_directory_is_keyed_by_source_contents_and_flags(tmp_path: Path) -> None:
    first = _tiny_builder(tmp_path, "int f() { return 1; }\n", ["-O2"]).build_directory()
    assert _tiny_builder(tmp_path, "int f() { return 1; }\n", ["-O2"]).build_directory() == first
    assert _tiny_builder(tmp_path, "int f() { return 2; }\n", ["-O2"]).build_directory() != first
    assert _tiny_builder(tmp_path, "int f() { return 1; }\n", ["-O3"]).build_directory() != first
    assert first.parent == Path(OpsSettings.from_environ().cache)
    inputs = _tiny_builder(tmp_path, "int f() { return 1; }\n", ["-O2"]).build_inputs()
    assert {"torch", "accelhal", "python"} <= set(inputs)
    json.dumps(inputs)  # the manifest records them


def test_ops_settings_defaults_and_validation(tmp_path: Path) -> None:
    assert OpsSettings.from_environ({"XDG_CACHE_HOME": str(tmp_path)}).cache == str(tmp_path / "accelhal" / "ops")
    assert OpsSettings.from_environ({"ACCELHAL_OPS_LOCK_TIMEOUT": " 60 "}).lock_timeout == 60.0
    with pytest.raises(ConfigurationError, match="ACCELHAL_OPS_LOCK_TIMEOUT"):
        OpsSettings.from_environ({"ACCELHAL_OPS_LOCK_TIMEOUT": "-1"})
    with pytest.raises(ConfigurationError, match="ACCELHAL_OPS_LOCK_STALE"):
        OpsSettings.from_environ({"ACCELHAL_OPS_LOCK_STALE": "soon"})


@pytest.mark.parametrize(("variable", "least"), [("ACCELHAL_OPS_LOCK_TIMEOUT", 1.0), ("ACCELHAL_OPS_LOCK_STALE", 30.0)])
def test_ops_lock_settings_take_no_less_than_their_least_value(variable: str, least: float) -> None:
    """A stale bound of seconds would break a live build's lock (its heartbeat comes every quarter of it)."""
    attribute = "lock_timeout" if variable.endswith("TIMEOUT") else "lock_stale"
    assert getattr(OpsSettings.from_environ({variable: f"{least:g}"}), attribute) == least
    below = f"{least / 2:g}"
    with pytest.raises(ConfigurationError) as info:
        OpsSettings.from_environ({variable: below})
    assert info.value.variable == variable
    assert f"{variable}='{below}' is not a number of seconds from {least:g} to 1000000" in str(info.value)
