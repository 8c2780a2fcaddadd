"""The broken backend's "device runtime": a flag that says whether a device context exists."""

from __future__ import annotations

_initialized = False


def init() -> None:
    """Create the device context."""
    global _initialized
    _initialized = True


def is_initialized() -> bool:
    """Whether a device context exists in this process."""
    return _initialized
