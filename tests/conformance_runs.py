"""Run pytest in a subprocess and read each test's outcome and message from its JUnit XML."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tests import warm
from tests.distributions import lay_out

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "accelhal" / "testing" / "conformance" / "run_all.py"
CLEAN = ("ACCELHAL_", "DS_ACCELERATOR", "PYTEST_ADDOPTS", "LOCAL_RANK", "LOCAL_SIZE", "LOCAL_WORLD_SIZE")


@dataclass(frozen=True)
class Outcome:
    """One test's result: ``passed``, ``failed``, ``error`` or ``skipped``, and the message."""

    outcome: str
    message: str


@dataclass(frozen=True)
class Run:
    """A pytest run: its exit code, output and outcomes keyed by test name (``test_x[param]``)."""

    returncode: int
    output: str
    outcomes: dict[str, Outcome]

    def of(self, outcome: str) -> dict[str, str]:
        """Tests with ``outcome``, and their messages."""
        return {name: o.message for name, o in self.outcomes.items() if o.outcome == outcome}


def _outcome(case: ET.Element) -> Outcome:
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = case.find(tag)
        if found is not None:
            return Outcome(outcome, f"{found.get('message', '')}\n{found.text or ''}")
    return Outcome("passed", "")


def run_pytest(
    tmp: Path,
    *args: str,
    pythonpath: tuple[Path, ...] = (),
    launcher: tuple[str, ...] = ("-m", "pytest"),
    after_torch: bool = False,
    **env: str,
) -> Run:
    """Run ``python -m pytest ARGS`` in ``tmp`` (a directory without configuration) and collect outcomes.

    ``launcher`` replaces ``-m pytest`` (e.g. a ``-c`` script calling ``run_suite`` with ``sys.argv[1:]``).
    With ``after_torch`` (a run that does not care whether torch was imported before it), the
    child is forked from a warm interpreter where that is the same as a fresh one (:mod:`tests.warm`).
    """
    report = tmp / "report.xml"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(CLEAN) and k != "PYTHONPATH"}
    if pythonpath:
        environ["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
    environ.update(env)
    options = [*launcher[2:], "-p", "no:cacheprovider", "-rs", f"--junitxml={report}", *args]
    if after_torch and launcher[0] == "-m":
        done = warm.run_module(launcher[1], options, environ, sys.executable, timeout=600, cwd=tmp)
    elif after_torch and launcher[0] == "-c":
        done = warm.run_code(launcher[1], options, environ, sys.executable, timeout=600, cwd=tmp)
    else:
        command = [sys.executable, *launcher[:2], *options]
        done = subprocess.run(command, cwd=tmp, env=environ, capture_output=True, text=True, timeout=600)
    outcomes: dict[str, Outcome] = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            outcomes[case.get("name", "")] = _outcome(case)
    return Run(done.returncode, done.stdout + done.stderr, outcomes)


def install_package(site: Path, package: Path, distribution: str, entry_points: dict[str, str]) -> None:
    """Lay ``package`` out in ``site`` as pip would, with a dist-info declaring ``accelhal`` entry points."""
    shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    lay_out(site, distribution, entry_points={"accelhal": entry_points})
