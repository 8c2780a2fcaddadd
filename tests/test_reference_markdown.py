"""The reference pages read on the repository (Markdown, before any build) say what the built site says."""

from __future__ import annotations

import re
from pathlib import Path

import accelhal
from accelhal.settings import VARIABLES

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
