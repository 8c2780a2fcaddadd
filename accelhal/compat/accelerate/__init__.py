"""Hugging Face Accelerate and transformers' Trainer on any accelhal backend (accelhal's ``accelerate`` extra).

Public: :func:`install` (before the first ``Accelerator()``, ``PartialState()`` or
``TrainingArguments()``), :func:`uninstall`, :func:`installed` (both, as a context manager) and
:func:`is_installed`. Importing this module imports neither Accelerate, transformers nor torch,
and patches nothing; :func:`install` imports Accelerate (transformers' ``TrainingArguments`` is
patched when transformers is imported, before or after the call). Nothing else in accelhal
imports Accelerate. See ``docs/accelerate.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator

__all__ = ["install", "installed", "is_installed", "uninstall"]


def install(acc: Accelerator | str | None = None) -> Accelerator:
    """Make Accelerate and transformers' Trainer use accelhal's accelerator; returns it.

    ``acc`` (an instance or a backend name) also becomes accelhal's active accelerator,
    so the program's own :func:`accelhal.get_accelerator` calls and Accelerate agree;
    ``None`` keeps the active one. Idempotent; every process of a launched run calls it
    (each runs the script).

    Raises, before anything is changed, :class:`~accelhal.UnsupportedReleaseError` for an
    Accelerate release outside the range supported, :class:`~accelhal.ContractError` for one
    whose members the adapter replaces are not in the shape known for that release,
    ``ImportError`` without Accelerate, and :class:`~accelhal.ConfigurationError` when
    Accelerate's state already exists (its device was chosen already). A transformers outside
    its range (or in another shape) does not stop it: only the Trainer needs transformers, and
    ``TrainingArguments`` raises the refusal where it chooses its device.
    """
    import accelhal
    from accelhal.compat.accelerate import _releases

    _releases.check_installed()  # before Accelerate is imported or anything changed
    from accelhal.compat.accelerate import _install

    _install.check_shapes()
    chosen = accelhal.get_accelerator() if acc is None else accelhal.set_accelerator(acc)
    _install.install()
    return chosen


def uninstall() -> None:
    """Give Accelerate and transformers their own code back (a no-op when not installed).

    A state made while installed keeps its device: reset it
    (``AcceleratorState._reset_state(reset_partial_state=True)``) for Accelerate to choose again.
    """
    if is_installed():
        from accelhal.compat.accelerate import _install

        _install.uninstall()


def is_installed() -> bool:
    """Whether :func:`install` is in effect."""
    import sys

    module = sys.modules.get("accelhal.compat.accelerate._install")
    return module is not None and bool(module.is_installed())


@contextmanager
def installed(acc: Accelerator | str | None = None) -> Iterator[Accelerator]:
    """:func:`install` for the ``with`` block; :func:`uninstall` at its end unless it was installed before."""
    before = is_installed()
    chosen = install(acc)
    try:
        yield chosen
    finally:
        if not before:
            uninstall()
