"""The one warning the command hides: torch's, about numpy not being installed."""

from __future__ import annotations

import warnings

TORCH_NUMPY_WARNING = r"Failed to initialize NumPy: No module named 'numpy'"
"""The start of the warning torch gives at ``import torch`` when numpy is not installed.

numpy is optional for torch (its CPU wheel does not depend on it) and accelhal never uses
it, so on a fresh install this warning says nothing about the machine: the command hides
exactly this one (:func:`hide_torch_numpy_warning`). A numpy that is installed but fails
to load warns with another message, which stays visible. Programs that import torch
without numpy still get the warning: accelhal, the library, changes no warning filter.
"""


def hide_torch_numpy_warning() -> None:
    """Ignore torch's warning that numpy is not installed (only that one: :data:`TORCH_NUMPY_WARNING`)."""
    warnings.filterwarnings("ignore", message=TORCH_NUMPY_WARNING, category=UserWarning)
