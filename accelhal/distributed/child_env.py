"""The variables a launcher writes for the processes it starts, as the active accelerator names them."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence


def set_visible_devices_envs(env: MutableMapping[str, str], device_ids: Sequence[int | str]) -> None:
    """Write the active backend's visible-devices variables for a child process into ``env``.

    Delegates to :meth:`accelhal.Accelerator.set_visible_devices_envs` of
    :func:`accelhal.get_accelerator` (``CUDA_VISIBLE_DEVICES`` on cuda, nothing on cpu).

    >>> child = dict(os.environ)
    >>> set_visible_devices_envs(child, [2, 3])   # on cuda: child["CUDA_VISIBLE_DEVICES"] == "2,3"
    """
    from accelhal.selection import get_accelerator

    get_accelerator().set_visible_devices_envs(env, device_ids)


def export_envs() -> list[str]:
    """Prefixes of the variables a multi-node launcher should forward to remote ranks.

    Delegates to :meth:`accelhal.Accelerator.export_envs` of :func:`accelhal.get_accelerator`
    (for example ``["NCCL"]`` on cuda).
    """
    from accelhal.selection import get_accelerator

    return get_accelerator().export_envs()
