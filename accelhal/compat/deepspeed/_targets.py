"""The DeepSpeed accelerator classes registered as accelhal backends in this process, by backend name."""

from __future__ import annotations

import threading

_registered: dict[str, tuple[str, str]] = {}
_lock = threading.Lock()


def register(backend_name: str, deepspeed_class: str, device_type: str) -> tuple[str, str]:
    """Record ``backend_name``'s target; returns what is recorded (the first registration wins)."""
    with _lock:
        return _registered.setdefault(backend_name, (deepspeed_class, device_type))


def registered_target(backend_name: str) -> tuple[str, str]:
    """The ``("module:Class", device_type)`` registered for ``backend_name`` by ``backend_from_deepspeed``."""
    try:
        return _registered[backend_name]
    except KeyError:
        raise AttributeError(
            f"no DeepSpeed accelerator was registered as backend {backend_name!r} in this process"
        ) from None
