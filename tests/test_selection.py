"""Selection rules: set_accelerator -> ACCELHAL_ACCELERATOR -> DS_ACCELERATOR -> priority -> cpu."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

import pytest

import accelhal
from accelhal import selection
from accelhal.contract.spec import Status
from accelhal.selection.messages import fallback_warning
from tests import warm
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

FALLBACK_WARNING = "accelhal: no accelerator qualified, so cpu is used ('accelhal explain' says why)"


def test_fallback_is_cpu_with_one_short_warning_and_the_verdicts_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="accelhal"):
        acc = accelhal.get_accelerator()
    assert acc.name == "cpu"
    report = accelhal.detect()
    assert (report.chosen, report.rule) == ("cpu", "fallback")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [FALLBACK_WARNING]
    (details,) = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and "Probed:" in r.getMessage()]
    for candidate in report.candidates:
        if candidate.name != "cpu":
            verdict = f"{candidate.name}: {candidate.status.value} ({candidate.reason})"
            assert verdict in details
            assert verdict in report.explanation


def test_the_concepts_page_quotes_the_warning_as_it_is() -> None:
    page = " ".join((Path(__file__).parent.parent / "docs" / "concepts.md").read_text().split())
    assert f"`{FALLBACK_WARNING}`" in page


def test_the_plugin_guide_says_the_warning_counts_plugin_problems_and_the_debug_log_names_them() -> None:
    page = " ".join((Path(__file__).parent.parent / "docs" / "plugins.md").read_text().split())
    counted = fallback_warning(2).split("says why; ")[1].rstrip(")")
    said = f"counts the problems in its one-line warning (`{counted}`) and names each in the `accelhal` logger's DEBUG"
    assert said in page


FIRST_CALL = """
import logging, sys
if sys.argv[1:] == ["debug"]:
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
import accelhal
accelhal.get_accelerator()
"""


def _first_call(*args: str, path: str = "") -> list[str]:
    """The lines a fresh process's first ``get_accelerator()`` writes to stderr (logging as a program leaves it)."""
    env = {**os.environ, "PYTHONPATH": path} if path else dict(os.environ)
    result = warm.run_code(FIRST_CALL, list(args), env, sys.executable, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    return result.stderr.splitlines()


def test_a_programs_first_call_writes_one_short_line_naming_accelhal_explain() -> None:
    (line,) = _first_call()
    assert line == FALLBACK_WARNING
    assert len(line) <= 120


def test_the_first_calls_debug_log_keeps_every_verdict() -> None:
    lines = _first_call("debug")
    assert f"WARNING accelhal: {FALLBACK_WARNING}" in lines
    (details,) = [line for line in lines if line.startswith("DEBUG accelhal: accelhal: the cpu fallback was chosen.")]
    for verdict in ("cuda: no-device (torch loads but torch.cuda.device_count() is 0", "npu: not-installed"):
        assert verdict in details


def test_the_fallback_warning_counts_plugin_problems_in_its_one_line(
    install_distribution: InstallDistribution,
) -> None:
    broken = "raise ImportError('libacme.so: cannot open shared object file')"
    modules = {"acme_one": broken, "acme_two": broken}
    site = install_distribution("acme-accel", modules, {"acmeone": "acme_one", "acmetwo": "acme_two"})
    (line,) = _first_call(path=str(site.parent))
    assert line == FALLBACK_WARNING[:-1] + "; 2 plugin problems: 'accelhal doctor')"
    assert len(line) <= 120
    lines = _first_call("debug", path=str(site.parent))
    (details,) = [line for line in lines if line.startswith("DEBUG accelhal: accelhal: the cpu fallback was chosen.")]
    assert "Plugin problems: plugin 'acmeone' cannot be imported: ImportError: libacme.so" in details


def test_cached_accelerator_is_the_same_object() -> None:
    assert accelhal.get_accelerator() is accelhal.get_accelerator()


def test_report_records_every_candidate_with_source_priority_verdict_and_time() -> None:
    report = accelhal.detect()
    cpu = report.candidate("cpu")
    assert cpu is not None
    assert cpu.source == "built-in"
    assert cpu.priority == 100
    assert cpu.status is Status.AVAILABLE
    assert cpu.probe_seconds is not None and cpu.probe_seconds >= 0
    assert [c.priority for c in report.candidates] == sorted((c.priority for c in report.candidates), reverse=True)
    assert report.model_dump_json()  # serialisable


def test_priority_picks_the_highest_available(install_distribution: InstallDistribution) -> None:
    install_distribution(
        "acme-accel",
        {
            "acme_high": backend_plugin("acmehigh", priority=950, probe_body="return Verdict.no_device('none here')"),
            "acme_mid": backend_plugin("acmemid", priority=700),
            "acme_low": backend_plugin("acmelow", priority=200),
        },
        {"acmehigh": "acme_high", "acmemid": "acme_mid", "acmelow": "acme_low"},
    )
    acc = accelhal.get_accelerator()
    assert acc.name == "acmemid"
    report = accelhal.detect()
    assert report.rule == "priority"
    assert report.candidate("acmehigh").status is Status.NO_DEVICE  # type: ignore[union-attr]
    low = report.candidate("acmelow")
    assert low is not None and low.status is Status.AVAILABLE and "lower priority" in low.reason
    assert report.candidate("acmemid").source == "acme-accel 1.0"  # type: ignore[union-attr]


def test_backends_below_the_chosen_one_are_probed_when_a_report_is_asked_for(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = "PROBES.append(1)\n    return Verdict.available('here')"
    install_distribution(
        "acme-accel",
        {
            "acme_high": backend_plugin("acmehigh", priority=950),
            "acme_low": backend_plugin("acmelow", priority=200, probe_body=counting, module_prelude="PROBES = []"),
        },
        {"acmehigh": "acme_high", "acmelow": "acme_low"},
    )
    import importlib

    assert accelhal.get_accelerator().name == "acmehigh"
    low_module = importlib.import_module("acme_low")
    assert low_module.PROBES == []  # the first get_accelerator() does not wait for it
    report = accelhal.detect()
    assert low_module.PROBES == [1]
    low = report.candidate("acmelow")
    assert low is not None and low.status is Status.AVAILABLE and low.reason == "here; lower priority than 'acmehigh'"
    assert "acmelow: available (here; lower priority than 'acmehigh')" in report.explanation
    assert report.candidate("cpu").status is Status.AVAILABLE  # type: ignore[union-attr]
    accelhal.detect()
    assert low_module.PROBES == [1]  # once

    accelhal.reset_accelerator()
    monkeypatch.setenv("ACCELHAL_STRICT", "1")  # strict mode probes every backend: any failure raises at once
    low_module.PROBES.clear()
    assert accelhal.get_accelerator().name == "acmehigh"
    assert low_module.PROBES == [1]


def test_environment_override_beats_priority(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution("acme-accel", {"acme_mid": backend_plugin("acmemid", priority=700)}, {"acmemid": "acme_mid"})
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cpu")
    assert accelhal.get_accelerator().name == "cpu"
    report = accelhal.detect()
    assert report.rule == "ACCELHAL_ACCELERATOR"
    assert report.candidate("acmemid").status is Status.NOT_PROBED  # type: ignore[union-attr]


def test_set_accelerator_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "definitely_unknown")
    mine = CpuAccelerator()
    assert accelhal.set_accelerator(mine) is mine
    assert accelhal.get_accelerator() is mine
    assert accelhal.detect().rule == "set_accelerator"


def test_set_accelerator_by_name_validates_like_the_variable(install_distribution: InstallDistribution) -> None:
    install_distribution(
        "acme-accel",
        {"acme_none": backend_plugin("acmenone", probe_body="return Verdict.no_device('0 acme devices')")},
        {"acmenone": "acme_none"},
    )
    assert accelhal.set_accelerator(" CPU ").name == "cpu"
    with pytest.raises(accelhal.UnknownBackendError, match="known accelerators: .*cpu"):
        accelhal.set_accelerator("tpu")
    with pytest.raises(accelhal.BackendUnavailableError, match="'acmenone'.*not available: 0 acme devices"):
        accelhal.set_accelerator("acmenone")
    with pytest.raises(accelhal.ConfigurationError, match="contains"):
        accelhal.set_accelerator("cpu;")
    assert accelhal.get_accelerator().name == "cpu"  # the failed calls changed nothing


def test_set_accelerator_rejects_objects_outside_the_contract() -> None:
    with pytest.raises(accelhal.ContractError, match="accelhal.Accelerator instance or a backend name"):
        accelhal.set_accelerator(object())  # type: ignore[arg-type]
    with pytest.raises(accelhal.ContractError):
        accelhal.set_accelerator(None)  # type: ignore[arg-type]
    assert accelhal.get_accelerator().name == "cpu"  # nothing was corrupted


def test_ds_accelerator_is_honoured_when_accelhal_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    assert accelhal.get_accelerator().name == "cpu"
    assert accelhal.detect().rule == "DS_ACCELERATOR"


def test_accelhal_variable_wins_over_ds_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DS_ACCELERATOR", "definitely_unknown")
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cpu")
    assert accelhal.get_accelerator().name == "cpu"
    assert accelhal.detect().rule == "ACCELHAL_ACCELERATOR"


def test_blank_accelhal_variable_defers_to_ds_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "   ")
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    assert accelhal.detect().rule == "DS_ACCELERATOR"


def test_ds_accelerator_xpu_external_means_xpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DS_ACCELERATOR", "xpu.external")
    with pytest.raises((accelhal.UnknownBackendError, accelhal.BackendUnavailableError), match="'xpu'"):
        accelhal.get_accelerator()


def test_failed_selection_is_not_cached_and_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "tpu")
    with pytest.raises(accelhal.UnknownBackendError):
        accelhal.get_accelerator()
    report = accelhal.detect()
    assert report.chosen is None and report.rule == "error"
    assert report.error is not None and "tpu" in report.error
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cpu")
    accelhal.reset_accelerator()
    assert accelhal.get_accelerator().name == "cpu"


def test_64_threads_racing_the_first_call_build_one_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelhal.discovery import plugins

    calls = {"discover": 0, "probe": 0}
    real_discover = plugins.discover
    from accelhal.selection import cascade

    real_probe = cascade.probe_candidate

    def counting_discover(*args: object, **kwargs: object) -> plugins.Registry:
        calls["discover"] += 1
        return real_discover(*args, **kwargs)  # type: ignore[arg-type]

    def counting_probe(registration: object) -> object:
        calls["probe"] += 1
        return real_probe(registration)  # type: ignore[arg-type]

    monkeypatch.setattr(plugins, "discover", counting_discover)
    monkeypatch.setattr(cascade, "probe_candidate", counting_probe)
    barrier = threading.Barrier(64)
    results: list[object] = []

    def worker() -> None:
        barrier.wait()
        results.append(accelhal.get_accelerator())

    threads = [threading.Thread(target=worker) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 64
    assert len({id(r) for r in results}) == 1
    assert calls["discover"] == 1
    assert calls["probe"] == len(selection.registry().backends)


def test_get_accelerator_inside_a_probe_is_an_error_not_a_recursion(
    install_distribution: InstallDistribution,
) -> None:
    install_distribution(
        "acme-accel",
        {"acme_rec": backend_plugin("acmerec", probe_body="import accelhal; accelhal.get_accelerator()")},
        {"acmerec": "acme_rec"},
    )
    assert accelhal.get_accelerator().name == "cpu"
    record = accelhal.detect().candidate("acmerec")
    assert record is not None and record.status is Status.PROBE_ERROR
    assert "while the accelerator is being selected" in record.reason
