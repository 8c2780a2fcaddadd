"""``use_accelerator``: swap the process's accelerator for the duration of a block."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator


@contextlib.contextmanager
def use_accelerator(accelerator: Accelerator | str) -> Iterator[Accelerator]:
    """Make ``accelerator`` (an instance or a backend name) active inside the block, then restore.

    On exit the previously active accelerator *and* its selection decision are put back
    exactly, including "nothing selected yet". A name is resolved like
    :func:`accelhal.set_accelerator` resolves it (registered and available, else it raises).
    The active accelerator is process-wide: blocks must nest (on one thread, or one thread
    at a time); blocks that overlap without nesting restore each other's accelerator.

    Example::

        with use_accelerator("cpu") as acc:
            assert accelhal.get_accelerator() is acc
    """
    from accelhal import selection

    saved = selection.snapshot()
    active = selection.set_accelerator(accelerator)
    try:
        yield active
    finally:
        selection.restore(saved)
