"""What a newcomer meets: no warning that is not accelhal's, plugin problems in ``info``, output in sentences.

Every run is a fresh ``python -m accelhal`` process with real installed distributions
(the staged plugins of ``conftest.py``, plus one that takes the name ``cpu`` without
``replaces=``), its output piped as in a bug report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

WITHOUT_NUMPY = """
import sys
message = sys.argv.pop(1)


class NoNumpy:
    '''numpy absent from this interpreter: Python's own error for a module that is not installed.'''

    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(message.format(name=name), name=name)
        return None


sys.meta_path.insert(0, NoNumpy())
from accelhal.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_no_numpy_warning_from_torch_on_a_fresh_install() -> None:
    """The CPU torch wheel does not depend on numpy; its warning about it is not shown."""
    result = run_accelhal("No module named {name!r}", "info", code=WITHOUT_NUMPY)
    assert result.returncode == 0, result.output
    assert result.stderr == "", result.stderr
    assert result.stdout.startswith("active backend: cpu")


def test_a_numpy_that_fails_otherwise_is_still_reported() -> None:
    """Only the 'not installed' warning is hidden: a broken numpy is a real problem."""
    result = run_accelhal("numpy is broken here ({name})", "info", code=WITHOUT_NUMPY)
    assert result.returncode == 0, result.output
    assert "Failed to initialize NumPy: numpy is broken here" in result.stderr


CPU_TAKER = backend_plugin("cpu", priority=100).replace("class CpuAccelerator(", "class CpuTaker(")
CPU_TAKER = CPU_TAKER.replace("accelerator=CpuAccelerator", "accelerator=CpuTaker")


@pytest.fixture
def troubled(install_distribution: InstallDistribution, staged_path: str) -> Callable[..., Result]:
    """The staged plugins, plus a distribution that registers 'cpu' without replaces=."""
    install_distribution("cpu-taker", {"cpu_taker": CPU_TAKER}, {"cputaker": "cpu_taker"}, version="0.3")

    def run(*args: str, env: Mapping[str, str] | None = None) -> Result:
        return run_accelhal(*args, env={"PYTHONPATH": staged_path, **(env or {})})

    return run


def test_info_lists_the_plugin_problems(troubled: Callable[..., Result]) -> None:
    result = troubled("info")
    assert result.returncode == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "plugin problems: 3 ('accelhal doctor' says how to fix each)" in flat
    assert "plugin 'staged_broken' cannot be imported (staged-broken 1.0): ImportError: staged:" in flat
    assert "plugin 'cputaker' registers a backend name that is already taken (cpu-taker 0.3)" in flat
    assert "plugin 'stagedplugins' failed while probing (staged-plugins 1.0): staged_raises: the probe raised" in flat
    data = troubled("info", "--json").json()
    failures, probed = data["plugin_problems"][:2], data["plugin_problems"][2:]
    assert failures == data["detection"]["failures"]
    stages = {p["plugin"]: p for p in failures}
    assert stages["staged_broken"]["stage"] == "import"
    assert stages["cputaker"]["stage"] == "conflict" and "replaces='cpu'" in stages["cputaker"]["hint"]
    assert [(p["backend"], p["stage"]) for p in probed] == [("staged_raises", "probe")]  # doctor's backend-broken


def test_info_says_none_when_there_are_no_plugin_problems() -> None:
    assert "plugin problems: none" in run_accelhal("info").stdout


def test_why_is_a_sentence_and_one_line_per_backend() -> None:
    lines = run_accelhal("info").stdout.splitlines()
    why = next(i for i, line in enumerate(lines) if line.startswith("why: "))
    assert lines[why] == "why: No accelerator qualified, so the cpu fallback was chosen. The probes said:"
    rows = [line.split(None, 2) for line in lines[why + 1 : why + 4]]
    assert [row[:2] for row in rows] == [["xpu", "no-device"], ["npu", "not-installed"], ["sdaa", "not-installed"]]
    forced = run_accelhal("info", env={"ACCELHAL_ACCELERATOR": "cpu"}).stdout
    assert "registered backends were not probed." in " ".join(forced.split())


def test_list_puts_the_hints_that_matter_under_the_table(install_distribution: InstallDistribution) -> None:
    broken = "return Verdict.broken('libacme.so: cannot open shared object file', hint='source /opt/acme/env.sh')"
    site = install_distribution("acme-accel", {"acme": backend_plugin("acme", probe_body=broken)}, {"acme": "acme"})
    lines = run_accelhal("list", env={"PYTHONPATH": str(site.parent)}).stdout.splitlines()
    row = next(line for line in lines if line.startswith(" acme "))
    assert row.split("|")[1].strip() == "broken" and "Hint" not in row
    hints = lines.index("hints:")
    assert lines[hints + 1] == "  - acme: Source /opt/acme/env.sh."
    assert hints > lines.index("* active: cpu (chosen by fallback)")


def test_why_names_the_winner_of_the_cascade(install_distribution: InstallDistribution) -> None:
    site = install_distribution("acme-accel", {"acme": backend_plugin("acme", priority=990)}, {"acme": "acme"})
    flat = " ".join(run_accelhal("info", env={"PYTHONPATH": str(site.parent)}).stdout.split())
    assert "active backend: acme (torch device type 'cpu', acme-accel 1.0)" in flat
    assert "why: 'acme' is the available backend with the highest priority (990). The other probes said:" in flat


def test_the_fallback_warning_counts_the_plugin_problems(staged_path: str) -> None:
    code = "import accelhal; accelhal.get_accelerator()"
    result = run_accelhal(code=code, env={"PYTHONPATH": staged_path})
    assert result.returncode == 0, result.output
    assert result.stderr.splitlines()[0] == (
        "accelhal: no accelerator qualified, so cpu is used "
        "('accelhal explain' says why; 2 plugin problems: 'accelhal doctor')"  # staged_broken, staged_raises
    )


def test_explain_bullets_continue_under_their_text(staged: Callable[..., Result]) -> None:
    lines = staged("explain", "staged_broken").stdout.splitlines()
    bullets = [i for i, line in enumerate(lines) if line.startswith("  - ")]
    assert bullets, lines
    between = lines[bullets[0] : bullets[-1] + 1]
    following = lines[bullets[-1] + 1 :]
    continued = between[1:] + following[: next((i for i, x in enumerate(following) if x[:1] != " "), 0)]
    assert continued, "the detail is long enough to wrap"
    assert all(line.startswith(("  - ", "    ")) for line in continued), lines


SLIPS = {
    "doubled": re.compile(r"not probed: not probed"),
    "status as an adjective": re.compile(r"\bis (not-installed|no-device|probe-error|not-probed|invalid|broken)\b"),
    "hint not a sentence": re.compile(r"Hint: [a-z]"),
    "fix not a sentence": re.compile(r"\bfix: [a-z]"),
    "stage as a place": re.compile(r"failed at (conflict|validate|register)\b"),
}


@pytest.mark.parametrize(
    ("env", "args"),
    [
        ({}, ["info"]),
        ({}, ["list"]),
        ({}, ["explain"]),
        ({}, ["explain", "staged_raises"]),
        ({}, ["explain", "staged_broken"]),
        ({}, ["doctor"]),
        ({"ACCELHAL_ACCELERATOR": "cpu"}, ["explain", "staged_nodev"]),
        ({"ACCELHAL_ACCELERATOR": "cpu"}, ["list"]),
        ({"ACCELHAL_ACCELERATOR": "staged_nodev"}, ["info"]),
        ({"ACCELHAL_STRICT": "1"}, ["explain"]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else ",".join(f"{k}={x}" for k, x in v.items()) or "default",
)
def test_no_wording_slips(troubled: Callable[..., Result], env: dict[str, str], args: list[str]) -> None:
    result = troubled(*args, env=env)
    assert "Traceback" not in result.output, result.output
    flat = " ".join(result.output.split())
    found = {slip: pattern.findall(flat) for slip, pattern in SLIPS.items() if pattern.search(flat)}
    assert not found, flat


@pytest.mark.parametrize(
    ("version", "fix"),
    [
        (99, "Upgrade accelhal: acme-ver 1.0 was written for contract version 99, newer than this accelhal knows"),
        (0, "Upgrade acme-ver 1.0: it was written for contract version 0, which this accelhal no longer supports"),
    ],
)
def test_doctor_says_which_to_upgrade_for_a_contract_version(
    install_distribution: InstallDistribution, version: int, fix: str
) -> None:
    source = backend_plugin("acmever", spec_extra=f", contract_version={version}")
    site = install_distribution("acme-ver", {"acme_ver": source}, {"acmever": "acme_ver"}).parent
    result = run_accelhal("doctor", "--json", env={"PYTHONPATH": str(site)})
    assert result.returncode == 1, result.output
    problem = next(p for p in result.json()["problems"] if p["code"] == "plugin-failed")
    assert problem["title"] == "plugin 'acmever' registered a backend that accelhal rejects"
    assert problem["fix"].startswith(fix), problem["fix"]
    assert "ACCELHAL_BLOCK_PLUGINS=acmever skips the plugin" in problem["fix"]
