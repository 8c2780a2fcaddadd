"""Accelerate's memory functions on the active backend: the device budget for placement, and the cache release.

``accelerate.utils.get_max_memory()`` (the free memory of each device and of the host, which
``infer_auto_device_map`` and ``device_map="auto"`` plan with) and
``accelerate.utils.memory.clear_device_cache()`` (behind ``Accelerator.free_memory()``,
``release_memory`` and ``find_executable_batch_size``) pick the device module through a
chain of vendor checks; the replacements ask the contract.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any

import psutil

import accelhal
from accelhal.compat._placement import is_host


def get_max_memory(original: Callable[..., Any]) -> Callable[..., Any]:
    """``get_max_memory``: each device's ``available_memory(i)`` and the host's available memory, in bytes.

    A ``max_memory`` given by the caller goes to Accelerate's own function, which converts
    its sizes (``"10GiB"``). A backend without a memory figure raises
    :class:`~accelhal.UnsupportedFeatureError` naming it.
    """

    @functools.wraps(original)
    def _get_max_memory(max_memory: dict[int | str, int | str] | None = None) -> dict[int | str, int | str]:
        if max_memory is not None:
            return original(max_memory)  # type: ignore[no-any-return]
        acc = accelhal.get_accelerator()
        budget: dict[int | str, int | str] = {}
        if not is_host(acc):
            budget.update({index: acc.available_memory(index) for index in range(acc.device_count())})
        budget["cpu"] = psutil.virtual_memory().available
        return budget

    return _get_max_memory


def clear_device_cache(original: Callable[..., Any]) -> Callable[..., Any]:
    """``clear_device_cache``: ``gc.collect()`` when asked, then the backend's ``empty_cache()``."""

    @functools.wraps(original)
    def _clear_device_cache(garbage_collection: bool = False) -> None:
        if garbage_collection:
            gc.collect()
        accelhal.get_accelerator().empty_cache()

    return _clear_device_cache
