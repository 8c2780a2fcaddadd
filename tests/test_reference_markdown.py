"""The reference pages read on the repository (Markdown, before any build) say what the built site says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import accelhal
from accelhal.process.settings import VARIABLES
from tests.cli.conftest import run_accelhal

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference"


def prose(page: str) -> str:
    """The page without its build-time directives."""
    return re.sub(r"```\{[^}]+\}.*?```", "", (REFERENCE / page).read_text(), flags=re.S)


def test_api_page_names_every_public_name() -> None:
    text = prose("api.md")
    public = [name for name in accelhal.__all__ if name != "__version__"]
    missing = [name for name in public if f"`{name}" not in text and f"`accelhal.{name}" not in text]
    assert not missing, missing


def test_environment_page_names_real_variables_and_every_accelhal_one() -> None:
    text = prose("environment.md")
    known = {v.name for v in VARIABLES}
    named = set(re.findall(r"`((?:ACCELHAL|DS)_[A-Z_]+)", text))
    assert named <= known, named - known
    users = {v.name for v in VARIABLES if v.name.startswith("ACCELHAL_") and "accelhal.testing" not in v.help}
    assert users <= named, users - named


def generated_pages() -> dict[Path, str]:
    """What ``scripts/reference_markdown.py`` writes now (skipped where the generic backend cannot load)."""
    try:
        import accelhal_backends.generic.accelerator  # noqa: F401 - torch.accelerator, from torch 2.6 on
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"the contract page lists the generic backend, which this torch cannot load: {exc}")
    from scripts.reference_markdown import pages

    return pages()


def test_generated_pages_are_what_the_code_says() -> None:
    stale = [path.name for path, text in generated_pages().items() if path.read_text() != text]
    assert not stale, f"{stale} differ from the code: run `python scripts/reference_markdown.py`"


EVERY_HELP = """
import sys
from accelhal.cli import main
for command in sys.argv[1:]:
    try:
        main([*command.split(), "--help"])
    except SystemExit:
        print("\\f", flush=True)
"""
"""The command's own entry point asked for each ``--help`` in turn, ``\\f`` after each."""


def test_cli_page_shows_the_help_the_command_prints_in_an_80_column_terminal() -> None:
    blocks = re.findall(
        r"^\$ accelhal ([^\n]*)--help\n(.*?)\n```", (REFERENCE / "cli.md").read_text(), flags=re.M | re.S
    )
    assert len(blocks) > 1, "the page shows no --help"
    commands = [command for command, _ in blocks]
    result = run_accelhal(*commands, code=EVERY_HELP, code_after_torch=True, env={"COLUMNS": "80"})
    assert result.returncode == 0, result.output
    printed = [text.strip("\n") for text in result.stdout.split("\f")[:-1]]
    assert printed == [text for _, text in blocks]


def test_contract_page_says_what_cpu_memory_figures_are() -> None:
    text = (REFERENCE / "contract.md").read_text()
    entry = text[text.index("### `memory_allocated`") : text.index("### `max_memory_allocated`")]
    assert "- `cpu` (`CpuAccelerator`): The process's resident set size in bytes." in entry


BUILTIN_RANGE = re.compile(r"\b(\d{3})\s*(?:to|\u2013|-|and)\s*(\d{3})\b")
"""A range of three-digit numbers, as a page would state the built-ins' priorities."""


def test_priority_range_is_stated_once_and_matches_the_catalog() -> None:
    from accelhal.contract.spec import BackendSpec
    from accelhal_backends import catalog

    priorities = {v.name: v.priority for v in vars(catalog).values() if isinstance(v, BackendSpec)}
    lowest, highest = min(priorities, key=priorities.__getitem__), max(priorities, key=priorities.__getitem__)
    stated = re.search(
        r"span (\d+) \(`(\w+)`, always last\) to (\d+) \(`(\w+)`\)", (REFERENCE / "priorities.md").read_text()
    )
    assert stated is not None
    assert stated.groups() == (str(priorities[lowest]), lowest, str(priorities[highest]), highest)
    repo = REFERENCE.parent.parent
    others = [*repo.glob("docs/**/*.md"), repo / "README.md", repo / "accelhal" / "contract" / "spec.py"]
    elsewhere = [
        f"{page.relative_to(repo)}: {match.group(0)}"
        for page in others
        if page.name != "priorities.md"
        for match in BUILTIN_RANGE.finditer(page.read_text())
        if "prio" in page.read_text()[max(0, match.start() - 200) : match.end()].lower()
    ]
    assert not elsewhere, f"the built-ins' priorities are stated in docs/reference/priorities.md only: {elsewhere}"


def test_no_other_page_restates_a_backends_priority() -> None:
    from accelhal.contract.spec import BackendSpec
    from accelhal_backends import catalog, generic

    priorities = {v.name: v.priority for v in vars(catalog).values() if isinstance(v, BackendSpec)}
    priorities["generic"] = generic.PRIORITY
    repo = REFERENCE.parent.parent
    restated = []
    for page in [*repo.glob("docs/**/*.md"), repo / "README.md"]:
        if page.name == "priorities.md":
            continue
        for line in page.read_text().splitlines():
            cells = [cell.strip() for cell in line.split("|")]
            name = cells[1].strip("`") if len(cells) > 2 else ""
            in_a_row = name in priorities and str(priorities[name]) in cells[2:]
            in_prose = re.search(rf"priority (?:is|of) ({'|'.join(map(str, priorities.values()))})\b", line)
            if in_a_row or in_prose:
                restated.append(f"{page.relative_to(repo)}: {line[:80]}")
    assert not restated, f"the backends' priorities are in docs/reference/priorities.md only: {restated}"


def test_contract_page_gives_each_backend_the_communication_backend_its_spec_declares() -> None:
    from accelhal.contract.spec import BackendSpec
    from accelhal_backends import catalog

    declared = {v.name: v.comm_backend for v in vars(catalog).values() if isinstance(v, BackendSpec)}
    text = (REFERENCE / "contract.md").read_text()
    entry = text[text.index("### `communication_backend_name`") : text.index("### `is_triton_supported`")]
    stated = {
        name: value
        for names, value in re.findall(r"^- ((?:`\w+`(?:, )?)+): `'(\w*)'`$", entry, re.M)
        for name in re.findall(r"`(\w+)`", names)
    }
    assert stated == declared  # the generic backend's depends on its device: the contract's text says what
