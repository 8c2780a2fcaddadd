"""Where a process of a framework's run puts its work on a backend: the adapters' one rule.

A backend whose devices carry no index (the host, ``cpu``) has one device that any number
of processes share; a backend with indexed devices gives each process of a node one of
them, by its local rank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelhal.errors import BackendUnavailableError

if TYPE_CHECKING:
    import torch

    from accelhal.contract.accelerator import Accelerator


def is_host(acc: Accelerator) -> bool:
    """True when the backend's devices carry no index (the host): any number of processes share it."""
    return acc.device(0).index is None


def process_device(acc: Accelerator, local_rank: int | None = None) -> torch.device:
    """The device of a process: the current device when ``local_rank`` is ``None``, else device ``local_rank % count``.

    An indexed device is made current (``set_device``). Raises
    :class:`~accelhal.BackendUnavailableError` when the backend counts no device.
    """
    if is_host(acc):
        return acc.device()
    if local_rank is None:
        index = acc.current_device()
    else:
        count = acc.device_count()
        if count < 1:
            raise BackendUnavailableError(acc.name, "device_count() is 0: there is no device to place this process on")
        index = local_rank % count
    acc.set_device(index)
    return acc.device(index)
