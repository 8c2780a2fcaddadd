"""Every plugin failure mode is reported and skipped, and raises under ACCELHAL_STRICT."""

from __future__ import annotations

import pytest

import accelhal
from accelhal.contract.spec import Status
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

FAILURES = {
    "import": (
        "raise ImportError('libacme.so: cannot open shared object file')",
        "import",
        "libacme.so",
    ),
    "hook": (
        backend_plugin("acmehook").replace(
            "    register(BackendSpec", "    raise RuntimeError('hook exploded')\n    register(BackendSpec"
        ),
        "register",
        "hook exploded",
    ),
    "not-a-spec": (
        "from accelhal import hookimpl\n"
        "@hookimpl\n"
        "def accelhal_register_backends(register):\n"
        "    register({'name': 'x'})\n",
        "register",
        "takes a BackendSpec",
    ),
    "bad-spec": (
        backend_plugin("acmebad").replace('name="acmebad"', 'name="Acme Bad!"'),
        "register",
        "name must match",
    ),
    "contract-version": (
        backend_plugin("acmever", spec_extra=", contract_version=99"),
        "validate",
        "contract version 99",
    ),
    "hookimpl-signature": (
        "from accelhal import hookimpl\n@hookimpl\ndef accelhal_register_backends(register, extra):\n    pass\n",
        "register",
        "extra",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_load_time_failures_are_reported_and_skipped(install_distribution: InstallDistribution, case: str) -> None:
    source, stage, text = FAILURES[case]
    install_distribution("acme-broken", {"acme_broken": source}, {"acmebroken": "acme_broken"})
    assert accelhal.get_accelerator().name == "cpu"
    report = accelhal.detect()
    matching = [f for f in report.failures if f.plugin == "acmebroken"]
    assert len(matching) == 1, report.failures
    assert matching[0].stage == stage
    assert text in matching[0].detail


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_load_time_failures_raise_under_strict_mode(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    source, stage, text = FAILURES[case]
    install_distribution("acme-broken", {"acme_broken": source}, {"acmebroken": "acme_broken"})
    monkeypatch.setenv("ACCELHAL_STRICT", "1")
    with pytest.raises(accelhal.PluginError, match=text) as info:
        accelhal.get_accelerator()
    assert info.value.plugin == "acmebroken" and info.value.stage == stage


def test_probe_that_raises_is_a_verdict_and_selection_goes_on(install_distribution: InstallDistribution) -> None:
    install_distribution(
        "acme-accel",
        {"acme_probe": backend_plugin("acmeprobe", priority=990, probe_body="raise OSError('driver said no')")},
        {"acmeprobe": "acme_probe"},
    )
    assert accelhal.get_accelerator().name == "cpu"
    record = accelhal.detect().candidate("acmeprobe")
    assert record is not None
    assert record.status is Status.PROBE_ERROR
    assert "OSError: driver said no" in record.reason


def test_probe_that_raises_fails_selection_under_strict_mode(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution(
        "acme-accel",
        {"acme_probe": backend_plugin("acmeprobe", priority=990, probe_body="raise OSError('driver said no')")},
        {"acmeprobe": "acme_probe"},
    )
    monkeypatch.setenv("ACCELHAL_STRICT", "true")
    with pytest.raises(accelhal.PluginError, match="driver said no"):
        accelhal.get_accelerator()


MISSING_MEMBERS = """
import abc
from accelhal import Accelerator

class Incomplete(Accelerator):
    _name = "acmeabs"
    device_type = "cpu"
"""


def test_accelerator_missing_abstract_members_is_skipped_with_the_list(
    install_distribution: InstallDistribution,
) -> None:
    source = backend_plugin("acmeabs", priority=990, module_prelude=MISSING_MEMBERS).replace(
        "accelerator=AcmeabsAccelerator", "accelerator=Incomplete"
    )
    install_distribution("acme-abs", {"acme_abs": source}, {"acmeabs": "acme_abs"})
    assert accelhal.get_accelerator().name == "cpu"
    report = accelhal.detect()
    record = report.candidate("acmeabs")
    assert record is not None and record.status is Status.INVALID
    assert "missing abstract members" in record.reason and "current_device" in record.reason
    assert any(f.stage == "validate" and f.plugin == "acmeabs" for f in report.failures)


def test_forced_backend_with_missing_members_is_an_error_not_a_fallback(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = backend_plugin("acmeabs", module_prelude=MISSING_MEMBERS).replace(
        "accelerator=AcmeabsAccelerator", "accelerator=Incomplete"
    )
    install_distribution("acme-abs", {"acme_abs": source}, {"acmeabs": "acme_abs"})
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "acmeabs")
    with pytest.raises(accelhal.BackendUnavailableError, match="missing abstract members"):
        accelhal.get_accelerator()


def test_forcing_the_backend_of_a_plugin_that_failed_to_load_says_so_with_its_error_cut(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = "libacme.so: cannot open shared object file: " + "searched " * 80
    install_distribution("acme-broken", {"acme_broken": f"raise ImportError({error!r})"}, {"acmebroken": "acme_broken"})
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "acmebroken")
    with pytest.raises(accelhal.BackendUnavailableError) as caught:
        accelhal.get_accelerator()
    message = str(caught.value)
    assert message.startswith(
        "accelerator 'acmebroken' (requested by ACCELHAL_ACCELERATOR) is not available: the plugin that would "
        "provide it, 'acmebroken' (acme-broken 1.0), failed to load: ImportError: libacme.so: cannot open shared "
    )
    assert "more characters)." in message and len(message) < 450, message  # the whole error: 900
    assert message.endswith(" Hint: 'accelhal doctor' shows its whole error and how to fix it.")
    assert "unknown" not in message


def test_lazy_class_reference_that_does_not_import_is_skipped(install_distribution: InstallDistribution) -> None:
    source = backend_plugin("acmelazy", priority=990).replace(
        "accelerator=AcmelazyAccelerator", "accelerator='acme_missing_module:Accel'"
    )
    install_distribution("acme-lazy", {"acme_lazy": source}, {"acmelazy": "acme_lazy"})
    assert accelhal.get_accelerator().name == "cpu"
    record = accelhal.detect().candidate("acmelazy")
    assert record is not None and record.status is Status.INVALID
    assert "acme_missing_module" in record.reason


def test_taking_a_registered_name_without_replaces_is_a_conflict_and_first_wins(
    install_distribution: InstallDistribution,
) -> None:
    source = backend_plugin("cpu", priority=999).replace(
        "class CpuAccelerator(CpuAccelerator)", "class Cpu2(CpuAccelerator)"
    )
    source = source.replace("accelerator=CpuAccelerator", "accelerator=Cpu2")
    install_distribution("acme-cpu", {"acme_cpu": source}, {"acmecpu": "acme_cpu"})
    report = accelhal.detect()
    assert report.candidate("cpu").source == "built-in"  # type: ignore[union-attr]
    conflict = [f for f in report.failures if f.stage == "conflict"]
    assert len(conflict) == 1 and "already registered by built-in" in conflict[0].detail
    assert "replaces='cpu'" in (conflict[0].hint or "") and "ACCELHAL_BLOCK_PLUGINS=acmecpu" in (conflict[0].hint or "")


@pytest.mark.parametrize(
    ("where", "version", "upgrade"),
    [
        ("spec", 99, "upgrade accelhal: acme-ver 1.0 was written for contract version 99"),
        ("spec", 0, "upgrade acme-ver 1.0: it was written for contract version 0"),
        ("class", 99, "upgrade accelhal: acme-ver 1.0 was written for contract version 99"),
    ],
)
def test_an_unsupported_contract_version_says_what_to_upgrade(
    install_distribution: InstallDistribution, where: str, version: int, upgrade: str
) -> None:
    """Newer than this accelhal knows: upgrade accelhal; older than it supports: upgrade the plugin."""
    if where == "spec":
        source = backend_plugin("acmever", priority=990, spec_extra=f", contract_version={version}")
    else:
        source = backend_plugin("acmever", priority=990, class_body=f"contract_version = {version}")
    install_distribution("acme-ver", {"acme_ver": source}, {"acmever": "acme_ver"})
    assert accelhal.get_accelerator().name == "cpu"
    failure = next(f for f in accelhal.detect().failures if f.plugin == "acmever")
    assert failure.stage == "validate" and (failure.hint or "").startswith(upgrade), failure


def test_replaces_takes_the_name_over_on_purpose(install_distribution: InstallDistribution) -> None:
    source = backend_plugin("cpu", priority=100, spec_extra=", replaces='cpu'").replace(
        "class CpuAccelerator(CpuAccelerator)", "class Cpu2(CpuAccelerator)"
    )
    source = source.replace("accelerator=CpuAccelerator", "accelerator=Cpu2")
    install_distribution("acme-cpu", {"acme_cpu": source}, {"acmecpu": "acme_cpu"})
    acc = accelhal.get_accelerator()
    assert type(acc).__name__ == "Cpu2"
    report = accelhal.detect()
    assert report.candidate("cpu").source == "acme-cpu 1.0"  # type: ignore[union-attr]
    assert not report.failures


def test_block_list_skips_a_plugin(install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch) -> None:
    install_distribution("acme-accel", {"acme_mid": backend_plugin("acmemid", priority=700)}, {"acmemid": "acme_mid"})
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "acme-accel")  # by distribution name
    assert accelhal.get_accelerator().name == "cpu"
    plugin = next(p for p in accelhal.detect().plugins if p.name == "acmemid")
    assert plugin.state == "blocked"


def test_allow_list_loads_only_named_third_party_plugins(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution(
        "acme-accel",
        {"acme_a": backend_plugin("acmea", priority=700), "acme_b": backend_plugin("acmeb", priority=800)},
        {"acmea": "acme_a", "acmeb": "acme_b"},
    )
    monkeypatch.setenv("ACCELHAL_PLUGINS", "acmea")
    assert accelhal.get_accelerator().name == "acmea"
    states = {p.name: p.state for p in accelhal.detect().plugins}
    assert states["acmeb"] == "not-allowed" and states["acmea"] == "loaded" and states["cpu"] == "loaded"


def test_disable_autoload_loads_only_builtins(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution("acme-accel", {"acme_mid": backend_plugin("acmemid", priority=700)}, {"acmemid": "acme_mid"})
    monkeypatch.setenv("ACCELHAL_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert accelhal.get_accelerator().name == "cpu"
    states = {p.name: p.state for p in accelhal.detect().plugins}
    assert states["acmemid"] == "autoload-disabled"


def test_blocked_plugin_named_by_the_override_says_it_is_blocked(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution("acme-accel", {"acme_mid": backend_plugin("acmemid", priority=700)}, {"acmemid": "acme_mid"})
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "acmemid")
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "acmemid")
    with pytest.raises(accelhal.UnknownBackendError, match="ACCELHAL_BLOCK_PLUGINS"):
        accelhal.get_accelerator()


def test_the_cpu_fallback_cannot_be_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "cpu")
    with pytest.raises(accelhal.ConfigurationError, match="cannot be blocked"):
        accelhal.get_accelerator()


def test_missing_members_raise_under_strict_mode(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = backend_plugin("acmeabs", priority=990, module_prelude=MISSING_MEMBERS).replace(
        "accelerator=AcmeabsAccelerator", "accelerator=Incomplete"
    )
    install_distribution("acme-abs", {"acme_abs": source}, {"acmeabs": "acme_abs"})
    monkeypatch.setenv("ACCELHAL_STRICT", "1")
    with pytest.raises(accelhal.PluginError, match="missing abstract members") as info:
        accelhal.get_accelerator()
    assert info.value.stage == "validate"


def test_name_conflict_raises_under_strict_mode(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = backend_plugin("cpu").replace("class CpuAccelerator(CpuAccelerator)", "class Cpu2(CpuAccelerator)")
    install_distribution(
        "acme-cpu",
        {"acme_cpu": source.replace("accelerator=CpuAccelerator", "accelerator=Cpu2")},
        {"acmecpu": "acme_cpu"},
    )
    monkeypatch.setenv("ACCELHAL_STRICT", "1")
    with pytest.raises(accelhal.PluginError, match="already registered by built-in") as info:
        accelhal.get_accelerator()
    assert info.value.stage == "conflict"


def _shaped(hook: str) -> str:
    """The ``acmeshape`` plugin of :func:`backend_plugin`, its hook declared as ``hook`` declares it."""
    plain = backend_plugin("acmeshape")
    declaration = plain[plain.index("@hookimpl") :]
    body = declaration.replace("@hookimpl\ndef accelhal_register_backends(register):", "def _register(register):")
    return plain.replace(declaration, body + "\n" + hook)


PLUGIN_SHAPES = {
    "module, hook under another name (specname)": (
        _shaped(
            "@hookimpl(specname='accelhal_register_backends')\ndef contribute(register):\n    _register(register)\n"
        ),
        "acme_shape",
    ),
    "module, hook as a module-level staticmethod": (
        _shaped("accelhal_register_backends = hookimpl(staticmethod(_register))\n"),
        "acme_shape",
    ),
    "object with a hook method": (
        _shaped(
            "class Plugin:\n    @hookimpl\n    def accelhal_register_backends(self, register):\n"
            "        _register(register)\n\nPLUGIN = Plugin()\n"
        ),
        "acme_shape:PLUGIN",
    ),
}


@pytest.mark.parametrize("shape", sorted(PLUGIN_SHAPES))
def test_every_plugin_shape_pluggy_accepts_is_found(install_distribution: InstallDistribution, shape: str) -> None:
    source, target = PLUGIN_SHAPES[shape]
    install_distribution("acme-shape", {"acme_shape": source}, {"acmeshape": target})
    assert accelhal.get_accelerator().name == "acmeshape"
    assert not [f for f in accelhal.detect().failures if f.plugin == "acmeshape"]


def test_a_module_attribute_that_is_not_a_hook_is_never_evaluated(install_distribution: InstallDistribution) -> None:
    source = backend_plugin("acmelazy") + (
        "\ndef __getattr__(name):\n    raise SystemExit('module __getattr__ evaluated for ' + name)\n"
        "\nclass _Boom:\n    def __getattr__(self, name):\n        raise SystemExit('attribute evaluated: ' + name)\n"
        "\nBOOM = _Boom()\n"
    )
    install_distribution("acme-lazy", {"acme_lazy": source}, {"acmelazy": "acme_lazy"})
    assert accelhal.get_accelerator().name == "acmelazy"
    assert not accelhal.detect().failures
