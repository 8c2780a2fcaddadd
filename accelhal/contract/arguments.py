"""Checking the arguments of contract members: one rule per kind of argument, shared by every backend."""

from __future__ import annotations

import torch

from accelhal.text import MAX_DIGITS, quote


def _decimal(text: str) -> bool:
    """Whether ``text`` is 1 to :data:`~accelhal.text.MAX_DIGITS` decimal digits (what ``int()`` reads at once)."""
    return text.isdecimal() and len(text) <= MAX_DIGITS


def check_device_index(device_index: object, member: str | None = None) -> int:
    """``device_index`` as an ``int``, or a ``TypeError``/``ValueError`` naming ``member`` (when given) and the value.

    Accepts what DeepSpeed's own accelerators accept: an ``int``, a decimal string (a
    launcher's ``LOCAL_RANK`` passed on unconverted, ``"0"``) and an indexed ``torch.device``.

    >>> check_device_index("1"), check_device_index(torch.device("cuda", 2))
    (1, 2)
    """
    if type(device_index) is int and device_index >= 0:
        return device_index
    if isinstance(device_index, str) and _decimal(device_index.strip()):
        return int(device_index.strip())
    if isinstance(device_index, torch.device) and device_index.index is not None:
        return device_index.index
    where = "" if member is None else f"{member}: "
    digits = f"(at most {MAX_DIGITS} digits)"
    expected = f"{where}device_index must be a non-negative int, a decimal string {digits} or None"
    if isinstance(device_index, int) and not isinstance(device_index, bool):
        raise ValueError(f"{expected}, got {quote(device_index)}")
    raise TypeError(f"{expected}, got {quote(device_index)}")


def check_device_in_range(index: int, count: int, member: str) -> int:
    """``index`` when it is below ``count`` (the backend's ``device_count()``), else a ``ValueError``."""
    if index >= count:
        raise ValueError(f"{member}: device index {quote(index)} is out of range: device_count() is {count}")
    return index


def check_tensor(value: object, member: str) -> torch.Tensor:
    """``value`` when it is a ``torch.Tensor``, else a ``TypeError`` naming ``member``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{member} takes a torch.Tensor, got {type(value).__qualname__}: {quote(value)}")
    return value


def check_seed(seed: object, member: str) -> int:
    """``seed`` as an ``int`` (a decimal string is accepted, as torch accepts one), else a ``TypeError``."""
    if isinstance(seed, str) and _decimal(seed.strip().removeprefix("-")):
        return int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"{member} takes an int seed, got {type(seed).__qualname__}: {quote(seed)}")
    return seed
