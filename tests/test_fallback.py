"""The cpu fallback cannot be held back by any list, and "nothing is available" names what removed the rest."""

from __future__ import annotations

import pytest

import accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

BUILT_IN_ACCELERATORS = {"xpu", "npu", "sdaa", "mps", "hpu", "mlu", "supa", "musa", "cuda", "xla"}


@pytest.mark.parametrize("value", ["accelhal", "ACCELHAL", " Accelhal ", "accelhal,cuda", "accelhal-backends"])
def test_blocking_accelhals_distribution_keeps_the_fallback(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", value)
    assert accelhal.get_accelerator().name == "cpu"
    report = accelhal.detect()
    states = {p.name: p.state for p in report.plugins}
    assert states["cpu"] == "loaded"
    if "accelhal-backends" not in value:  # not a plugin or distribution name: blocks nothing
        assert {n for n, s in states.items() if s == "blocked"} >= BUILT_IN_ACCELERATORS
        assert [c.name for c in report.candidates] == ["cpu"]


@pytest.mark.parametrize("value", ["cpu", "CPU", " cpu ", "cuda,cpu"])
def test_naming_the_fallback_is_an_error_that_says_why(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", value)
    with pytest.raises(accelhal.ConfigurationError, match="cannot be blocked") as info:
        accelhal.get_accelerator()
    assert info.value.variable == "ACCELHAL_BLOCK_PLUGINS"


def test_allow_list_and_autoload_switch_never_remove_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_PLUGINS", "nothing_by_this_name")
    monkeypatch.setenv("ACCELHAL_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert accelhal.get_accelerator().name == "cpu"


def test_nothing_available_names_the_lists_that_removed_candidates(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replacement of cpu that sees no device, with accelhal's other built-ins blocked: nothing is left."""
    source = backend_plugin(
        "cpu", priority=100, spec_extra=", replaces='cpu'", probe_body="return Verdict.no_device('acme: no host')"
    ).replace("class CpuAccelerator(CpuAccelerator)", "class Cpu2(CpuAccelerator)")
    install_distribution(
        "acme-cpu",
        {"acme_cpu": source.replace("accelerator=CpuAccelerator", "accelerator=Cpu2")},
        {"acmecpu": "acme_cpu"},
    )
    install_distribution("acme-other", {"acme_other": backend_plugin("acmeother")}, {"acmeother": "acme_other"})
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "accelhal")
    monkeypatch.setenv("ACCELHAL_PLUGINS", "acmecpu")
    with pytest.raises(accelhal.BackendUnavailableError) as info:
        accelhal.get_accelerator()
    message = str(info.value)
    assert "not even the cpu fallback" in message and "cpu: no-device (acme: no host)" in message
    assert (
        "ACCELHAL_BLOCK_PLUGINS held back builtin_ops, cuda, generic, hpu, mlu, mps, musa, npu, sdaa, supa, xla, xpu"
        in message
    )
    assert "ACCELHAL_PLUGINS held back acmeother" in message
