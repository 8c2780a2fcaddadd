"""Sphinx configuration for accelhal's documentation (Markdown pages through MyST)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))

from accelhal import __version__  # noqa: E402

project = "accelhal"
author = "accelhal developers"
copyright = "accelhal developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "accelhal_docs",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}

# No network at build time (no intersphinx): names from torch, pydantic, pluggy, rich and
# the standard library are left as plain text instead of failing the nitpicky build.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(torch|pydantic|pluggy|rich|argparse|types|enum|typing|collections|contextlib|importlib|dataclasses|"
        r"threading|logging|abc|re|os|pathlib|datetime|subprocess|metadata)(\..*)?",
    ),
    (
        r"py:.*",
        r"(int|str|bool|float|bytes|object|type|list|dict|tuple|set|frozenset|None|Exception|"
        r"ValueError|TypeError|RuntimeError|NotImplementedError|Callable|Any|Sequence|Mapping|timedelta)",
    ),
    # private helpers (type variables, base classes) are not documented
    (r"py:.*", r"(.*\.)?_[A-Za-z]\w*"),
    # op builders are documented with the ops package once it defines them
    (r"py:.*", r"accelhal\.ops\..*"),
    # napoleon reads "Name: text" in these attribute docstrings as a type
    ("py:class", "A backend name"),
    ("py:class", "Decorator marking a plugin's hook implementations"),
    # the selection's plain record of `import torch` (a type-checking import); its report is TorchImportReport
    ("py:class", "TorchDiagnosis"),
]

html_theme = "furo"
html_title = f"accelhal {release}"
# Code blocks wrap long lines (comments, commands) instead of scrolling sideways.
html_static_path = ["_static"]
html_css_files = ["accelhal.css"]
