"""The test device's Python module, registered as ``torch.<name>`` by :func:`tests.privateuse1.device.load`.

Like the module of a small out-of-tree vendor (PyTorch's OpenReg): devices, lazy
initialisation, fork safety and the default generators. Streams, events and memory
figures are not here; torch's generic ``torch.Stream``, ``torch.Event`` and
``torch.accelerator.memory`` serve them through the device's guard and allocator.
"""

from __future__ import annotations

from typing import Any

import torch

_ops: Any = torch.ops.accelhal_testdev
_MASK64 = (1 << 64) - 1

__all__ = [
    "current_device",
    "device",
    "device_count",
    "get_rng_state",
    "get_rng_state_all",
    "has_primary_context",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "synchronize",
]


def _index(device: Any, optional: bool = True) -> int:
    """A device index from an int, a ``"<name>:<i>"`` string or a ``torch.device``; None -> the current one."""
    if device is None:
        if not optional:
            raise ValueError("a device is required")
        return current_device()
    if isinstance(device, int):
        return device
    parsed = torch.device(device)
    name = torch._C._get_privateuse1_backend_name()
    if parsed.type != name:
        raise ValueError(f"expected a {name!r} device, got {parsed}")
    return current_device() if parsed.index is None else parsed.index


def _signed(seed: int) -> int:
    seed = int(seed) & _MASK64
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def is_available() -> bool:
    """True when at least one device is visible; creates no context."""
    return device_count() > 0


def device_count() -> int:
    """The number of devices (``ACCELHAL_TESTDEV_DEVICES``); creates no context."""
    return int(_ops.device_count())


def current_device() -> int:
    """The index of the current device of this thread."""
    return int(_ops.current_device())


def set_device(device: Any) -> None:
    """Make ``device`` current for this thread (creates its context); a negative index is a no-op."""
    index = _index(device, optional=False)
    if index >= 0:
        _ops.set_device(index)


class device:  # noqa: N801  (torch's device modules spell it so)
    """Context manager that makes ``device`` current and restores the previous one."""

    def __init__(self, device: Any) -> None:
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = int(_ops.exchange_device(self.index))

    def __exit__(self, *exc_info: object) -> None:
        if self.previous >= 0:
            _ops.set_device(self.previous)


def synchronize(device: Any = None) -> None:
    """Wait for the work queued on ``device`` (synchronous here: only checks the device)."""
    _ops.synchronize(_index(device))


def has_primary_context(device_index: int) -> bool:
    """Whether device ``device_index`` has a context (a first real use created it)."""
    return bool(_ops.has_primary_context(device_index))


def is_initialized() -> bool:
    """True once any device has a context, as ``torch.cuda.is_initialized``."""
    return any(has_primary_context(i) for i in range(device_count()))


def _is_in_bad_fork() -> bool:
    return bool(_ops.in_bad_fork())


def _lazy_init() -> None:
    _ops.lazy_init()


def init() -> None:
    """Create the current device's context."""
    _lazy_init()


def manual_seed(seed: int) -> None:
    """Seed the current device's default generator."""
    _ops.manual_seed(_signed(seed), current_device())


def manual_seed_all(seed: int) -> None:
    """Seed every device's default generator (creates no context)."""
    for index in range(device_count()):
        _ops.manual_seed(_signed(seed), index)


def seed() -> None:
    """Seed the current device's default generator from a random number."""
    _ops.seed(current_device())


def seed_all() -> None:
    """Seed every device's default generator from a random number."""
    for index in range(device_count()):
        _ops.seed(index)


def initial_seed() -> int:
    """The seed of the current device's default generator."""
    return int(_ops.initial_seed(current_device())) & _MASK64


def __getattr__(name: str) -> Any:
    """``default_generators``: every device's default ``torch.Generator`` (creates no context)."""
    if name == "default_generators":
        return tuple(_ops.default_generator(i) for i in range(device_count()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_rng_state(device: Any = None) -> torch.Tensor:
    """The state of ``device``'s default generator, as a CPU ``ByteTensor``."""
    return _ops.get_rng_state(_index(device))  # type: ignore[no-any-return]


def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
    """Restore ``device``'s default generator from :func:`get_rng_state`'s result."""
    _ops.set_rng_state(new_state, _index(device))


def get_rng_state_all() -> list[torch.Tensor]:
    """The states of every device's default generator."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    """Restore every device's default generator."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
