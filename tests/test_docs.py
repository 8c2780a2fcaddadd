"""The documentation site builds with warnings as errors, and its generated tables follow the code."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from accelhal.process.settings import SECONDS_LEAST, VARIABLES
from accelhal.selection import registry

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sphinx", reason="install the 'docs' extra (or run `nox -s docs`)")
    pytest.importorskip("myst_parser", reason="install the 'docs' extra (or run `nox -s docs`)")
    out = tmp_path_factory.mktemp("site")
    build = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"]
    build += ["-d", str(out / ".doctrees")]
    result = subprocess.run([*build, str(REPO / "docs"), str(out)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return out


def text(page: Path) -> str:
    """The page's words, with Sphinx's typographic quotes made plain again."""
    words = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text())))
    return words.replace("\u2018", "'").replace("\u2019", "'")


def test_environment_page_lists_every_variable(site: Path) -> None:
    page = text(site / "reference" / "environment.html")
    for variable in VARIABLES:
        assert variable.name in page
        assert " ".join(variable.help.split()) in page


def test_environment_page_gives_each_seconds_variable_its_least_value(site: Path) -> None:
    page = text(site / "reference" / "environment.html")
    for name, least in SECONDS_LEAST.items():
        assert f"{name} seconds, at least {least:g} " in page, name


def test_priority_table_follows_the_registry(site: Path) -> None:
    page = text(site / "reference" / "priorities.html")
    builtins = [r for r in registry().ordered() if r.plugin.builtin]
    rows = [f"{rank} {r.spec.name} {r.spec.priority} {r.spec.device_type}" for rank, r in enumerate(builtins, 1)]
    for row in rows:
        assert row in page
    positions = [page.index(row) for row in rows]
    assert positions == sorted(positions)


def test_cli_reference_has_every_subcommand(site: Path) -> None:
    page = text(site / "reference" / "cli.html")
    for command in ("info", "list", "explain", "doctor", "check", "schema"):
        assert f"usage: accelhal {command}" in page
