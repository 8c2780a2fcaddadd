"""Test helpers for accelhal and for backend authors.

* :func:`use_accelerator` swaps the process's accelerator for a block and restores it.
* :func:`run_suite` runs the conformance suite (:mod:`accelhal.testing.conformance`) on a backend.
* :mod:`accelhal.testing.plugin` is the pytest plugin (``--accelhal-backend``, the ``accelerator``
  fixture, the ``accelerator``/``capability`` markers), registered through the ``pytest11`` entry point.
* :mod:`accelhal.testing.simulated` holds simulated vendor runtimes and the recorded vendor surfaces.

This package is imported by pytest in every run where accelhal is installed, so it stays
cheap: names are loaded on first access (no torch import here).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelhal.testing.runner import run_suite
    from accelhal.testing.switching import use_accelerator

_EXPORTS: dict[str, str] = {
    "use_accelerator": "accelhal.testing.switching",
    "run_suite": "accelhal.testing.runner",
}

__all__ = ["run_suite", "use_accelerator"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'accelhal.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
