"""A plugin's answers of the wrong shape are that plugin's failure, named; selection and every report go on.

Each case installs a real distribution beside a healthy one (``acmegood``, priority 950, below the hostile
backend's 990) and checks what a user sees: the healthy backend chosen, the hostile one's verdict or failure
naming what was wrong, and ``accelhal.detect()`` answering. Found by an adversarial pass: before, each of these
crashed ``get_accelerator()`` or every report, or printed nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import accelhal
from accelhal.contract.spec import Status
from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.distributions import lay_out
from tests.plugin_sources import backend_plugin

GOOD = backend_plugin("acmegood", priority=950)


def install_hostile(install_distribution: InstallDistribution, probe_body: str = "", spec_extra: str = "") -> None:
    """``acmegood`` and ``acmebad`` (priority 990): its probe runs ``probe_body``, its spec adds ``spec_extra``."""
    install_distribution("acme-good", {"acme_good": GOOD}, {"acmegood": "acme_good"})
    body = probe_body or "return Verdict.available('ok')"
    source = backend_plugin("acmebad", priority=990, probe_body=body, spec_extra=spec_extra)
    install_distribution(
        "acme-bad", {"acme_bad": "import io, sys\nfrom accelhal import Status\n" + source}, {"acmebad": "acme_bad"}
    )


@pytest.mark.parametrize(
    ("probe_body", "words"),
    [
        ("return Verdict('available', 'looks fine')", "status is 'available', not a Status; give Status.AVAILABLE"),
        ("return Verdict('nonsense', 'x')", "status is 'nonsense', not a Status; give a Status member"),
        ("return Verdict([], 'x')", "status is [], not a Status"),
        ("return Verdict(Status.AVAILABLE, None)", "reason is None, not a string"),
        ("return Verdict(Status.NO_DEVICE, 'x', hint=7)", "hint is 7, not a string"),
    ],
    ids=["str-status", "unknown-status", "unhashable-status", "no-reason", "int-hint"],
)
def test_a_verdict_of_the_wrong_shape_is_a_probe_error_naming_the_field(
    install_distribution: InstallDistribution, probe_body: str, words: str
) -> None:
    install_hostile(install_distribution, probe_body)
    assert accelhal.get_accelerator().name == "acmegood"
    report = accelhal.detect()
    bad = report.candidate("acmebad")
    assert bad is not None and bad.status is Status.PROBE_ERROR, bad
    assert words in bad.reason, bad.reason
    assert report.chosen == "acmegood" and report.error is None


def test_a_huge_reason_is_cut_and_says_how_much_was_left_out(install_distribution: InstallDistribution) -> None:
    install_hostile(install_distribution, "return Verdict.no_device('r' * 1_000_000, hint='h' * 10_000)")
    report = accelhal.detect()
    bad = report.candidate("acmebad")
    assert bad is not None and bad.status is Status.NO_DEVICE
    assert len(bad.reason) < 600 and bad.reason.endswith("(999500 more characters)"), bad.reason[-60:]
    assert bad.hint is not None and len(bad.hint) < 600 and bad.hint.endswith("(9500 more characters)")


@pytest.mark.parametrize(
    ("spec_extra", "words"),
    [
        (", comm_backend=None", "comm_backend must be a torch.distributed backend name"),
        (", visible_devices_envs=(7,)", "visible_devices_envs must be a tuple of variable names, got (7,)"),
        (", description=3", "description must be a string, got 3"),
        (", module=1", "module must be a module name or None, got 1"),
    ],
    ids=["comm-backend", "visible-devices", "description", "module"],
)
def test_a_spec_field_of_the_wrong_type_is_the_plugins_register_failure(
    install_distribution: InstallDistribution, spec_extra: str, words: str
) -> None:
    install_hostile(install_distribution, spec_extra=spec_extra)
    assert accelhal.get_accelerator().name == "acmegood"
    report = accelhal.detect()  # every report field validates: the bad spec never became a candidate
    assert report.candidate("acmebad") is None
    (failure,) = [f for f in report.failures if f.plugin == "acmebad"]
    assert failure.stage == "register" and words in failure.detail, failure


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_probe_that_replaces_a_stream_is_named_and_the_stream_put_back(
    install_distribution: InstallDistribution, stream: str
) -> None:
    install_hostile(install_distribution, f"sys.{stream} = io.StringIO()\n    return Verdict.available('ok')")
    before = getattr(sys, stream)
    assert accelhal.get_accelerator().name == "acmegood"
    assert getattr(sys, stream) is before
    bad = accelhal.detect().candidate("acmebad")
    assert bad is not None and bad.status is Status.PROBE_ERROR
    assert f"the probe replaces sys.{stream}" in bad.reason and "accelhal put it back" in bad.reason


def test_a_plugin_that_replaces_stdout_on_import_does_not_silence_the_command(tmp_path: Path) -> None:
    """Before, ``accelhal info --json`` printed nothing and exited 0."""
    site = tmp_path / "site"
    module = "import io, sys\nsys.stdout = io.StringIO()\n"
    lay_out(site, "acme-mute", entry_points={"accelhal": {"acmemute": "acme_mute"}}, files={"acme_mute.py": module})
    result = run_accelhal("info", "--json", env={"PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.returncode == 0, result.output
    plugins = {p["name"]: p for p in result.json()["detection"]["plugins"]}
    assert plugins["acmemute"]["state"] == "failed"
    assert "replaces sys.stdout" in plugins["acmemute"]["detail"]


def test_a_plugin_whose_metadata_is_not_utf8_is_loaded_in_a_fresh_process(tmp_path: Path) -> None:
    """An old tool's Latin-1 author name: before, ``UnicodeDecodeError`` from every ``get_accelerator()``."""
    site = tmp_path / "site"
    source = backend_plugin("acmelatin", priority=990)
    info = lay_out(
        site, "acme-latin", entry_points={"accelhal": {"acmelatin": "acme_latin"}}, files={"acme_latin.py": source}
    )
    (info / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: acme-latin\nVersion: 1.0\nAuthor: J\xfcrgen\n")
    code = (
        "import accelhal; print(accelhal.get_accelerator().name); "
        "print([(p.distribution, p.distribution_version) for p in accelhal.detect().plugins if not p.builtin])"
    )
    for forced in ("", "cpu"):
        env = {"PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache"), "ACCELHAL_ACCELERATOR": forced}
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr[-2000:]
        chosen, plugins = result.stdout.splitlines()[-2:]
        assert chosen == (forced or "acmelatin")
        assert plugins == "[('acme-latin', '1.0')]"


def test_describing_a_runtime_that_claims_four_billion_devices_is_an_error_at_once(
    install_distribution: InstallDistribution,
) -> None:
    """A C count of -1 read as unsigned; before, ``info()`` would have described 4,294,967,295 devices."""
    source = backend_plugin("acmehuge", priority=990, class_body="def device_count(self):\n        return 2**32 - 1")
    install_distribution("acme-huge", {"acme_huge": source}, {"acmehuge": "acme_huge"})
    accelerator = accelhal.get_accelerator()
    assert accelerator.name == "acmehuge"
    with pytest.raises(ValueError, match="device_count\\(\\) answered 4,294,967,295, more devices than any machine"):
        accelerator.info()
