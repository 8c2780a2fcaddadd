"""Whatever a plugin raises (SystemExit included) is that plugin's failure; nothing else is lost.

Each case installs a real distribution next to a healthy one (``acmegood``, priority
950) and checks: the healthy backend is still chosen, every other backend's verdict is
what it is without the broken plugin, and the failure names the plugin, the stage, the
exception's type and its message.
"""

from __future__ import annotations

import re

import pytest

import accelhal
from accelhal.contract.spec import Status
from accelhal.report import DetectionReport
from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

GOOD = backend_plugin("acmegood", priority=950)

CUSTOM = "class Boom(BaseException):\n    pass\n"

CASES: dict[str, tuple[str, str, Status | None, str]] = {
    # case: (plugin source, failure stage, verdict of its backend (None: not registered), text in the failure)
    "import-sys-exit": ("import sys\nsys.exit(3)\n", "import", None, "SystemExit: 3"),
    "import-bare-exit": ("raise SystemExit\n", "import", None, "SystemExit (at "),
    "import-exit-message": ("raise SystemExit('plugin says bye')\n", "import", None, "SystemExit: plugin says bye"),
    "import-base-exception": (CUSTOM + "raise Boom('custom base')\n", "import", None, "Boom: custom base"),
    "hook": (
        backend_plugin("acmebroken", priority=990).replace(
            "    register(BackendSpec", "    raise SystemExit(4)\n    register(BackendSpec"
        ),
        "register",
        None,
        "SystemExit: 4",
    ),
    "probe": (
        backend_plugin("acmebroken", priority=990, probe_body="raise SystemExit(5)"),
        "probe",
        Status.PROBE_ERROR,
        "SystemExit: 5",
    ),
    "class-import": (
        backend_plugin("acmebroken", priority=990).replace(
            "accelerator=AcmebrokenAccelerator", "accelerator='acme_exit_on_import:Accel'"
        ),
        "import",
        Status.INVALID,
        "SystemExit: 6",
    ),
    "constructor": (
        backend_plugin("acmebroken", priority=990, class_body="def __init__(self):\n        raise SystemExit(7)"),
        "instantiate",
        Status.INVALID,
        "SystemExit: 7",
    ),
}


def verdicts(report: DetectionReport, without: str) -> dict[str, tuple[Status, str]]:
    return {c.name: (c.status, c.reason) for c in report.candidates if c.name != without}


def install(install_distribution: InstallDistribution, source: str) -> None:
    """``acmegood`` (priority 950) and ``acmebroken`` from ``source`` (and a module that exits on import)."""
    install_distribution("acme-good", {"acme_good": GOOD}, {"acmegood": "acme_good"})
    install_distribution(
        "acme-broken",
        {"acme_broken": source, "acme_exit_on_import": "raise SystemExit(6)\n"},
        {"acmebroken": "acme_broken"},
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_plugin_raising_any_exception_is_contained(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    install(install_distribution, CASES[case][0])
    _, stage, status, text = CASES[case]
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "acmebroken")
    baseline = accelhal.detect()
    assert baseline.chosen == "acmegood"
    monkeypatch.delenv("ACCELHAL_BLOCK_PLUGINS")
    accelhal.reset_accelerator()

    assert accelhal.get_accelerator().name == "acmegood"  # selection went on
    report = accelhal.detect()
    assert report.chosen == "acmegood" and report.error is None
    assert verdicts(report, "acmebroken") == verdicts(baseline, "acmebroken")  # nothing else changed
    failures = [f for f in report.failures if f.plugin == "acmebroken"]
    if stage == "probe":  # a probe's exception is its backend's verdict, not a plugin failure
        assert failures == []
    else:
        (failure,) = failures
        assert failure.stage == stage and text in failure.detail, failure
    broken = report.candidate("acmebroken")
    assert (broken.status if broken else None) is status
    if broken is not None:
        assert text in broken.reason


@pytest.mark.parametrize("case", sorted(CASES))
def test_under_strict_mode_it_is_a_plugin_error_and_detect_still_answers(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setenv("ACCELHAL_STRICT", "1")
    install(install_distribution, CASES[case][0])
    _, stage, _, text = CASES[case]
    with pytest.raises(accelhal.PluginError, match=re.escape(text)) as info:
        accelhal.get_accelerator()
    assert info.value.plugin == "acmebroken" and info.value.stage in (stage, "probe")
    report = accelhal.detect()  # never raises
    assert report.chosen is None and report.error is not None and "acmebroken" in report.error
    assert any(f.plugin == "acmebroken" for f in report.failures) or report.candidate("acmebroken")


def test_keyboard_interrupt_in_a_probe_goes_through(install_distribution: InstallDistribution) -> None:
    source = backend_plugin("acmeint", priority=990, probe_body="raise KeyboardInterrupt")
    install_distribution("acme-int", {"acme_int": source}, {"acmeint": "acme_int"})
    with pytest.raises(KeyboardInterrupt):
        accelhal.get_accelerator()


def test_import_time_of_each_plugin_is_in_the_report(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(install_distribution, "raise SystemExit(1)\n")
    install_distribution(
        "acme-blocked", {"acme_blocked": GOOD.replace("acmegood", "acmeblk")}, {"acmeblk": "acme_blocked"}
    )
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "acmeblk")
    report = accelhal.detect()
    seconds = {p.name: p.import_seconds for p in report.plugins}
    assert seconds["acmeblk"] is None  # not imported
    assert all(isinstance(seconds[n], float) and seconds[n] >= 0 for n in ("cpu", "acmegood", "acmebroken"))
    assert all(c.probe_seconds is not None for c in report.candidates)


EXITING = "import sys\nsys.exit(9)\n"


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["info", "--json"], 0),
        (["list", "--json"], 0),
        (["explain", "acmeexit", "--json"], 0),
        (["doctor", "--json"], 1),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_the_commands_survive_a_plugin_that_calls_sys_exit(
    install_distribution: InstallDistribution, args: list[str], status: int
) -> None:
    """Before, every command ended with the plugin's status 9 and printed nothing of accelhal's."""
    site = install_distribution("acme-exit", {"acme_exit": EXITING}, {"acmeexit": "acme_exit"})
    result = run_accelhal(*args, env={"PYTHONPATH": str(site.parent)})
    assert result.returncode == status, result.output
    data = result.json()
    text = str(data)
    assert "acmeexit" in text and "SystemExit: 9" in text
    chosen = data.get("chosen", data.get("active", data.get("detection", {}).get("chosen")))
    assert chosen == "cpu"
