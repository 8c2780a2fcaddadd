"""gloo's collectives for a device gloo cannot carry (mps): the device tensors go through host copies.

:class:`HostStagedGloo` is a process group holding one gloo group: a collective copies the device tensors to
host memory, runs gloo's collective on the copies and copies the results back, and is complete when it returns.
:func:`~accelhal.distributed.init_process_group` sets it up, under the name :data:`NAME`, where ``gloo`` is asked
for on a device gloo does not carry (:func:`backend_for`). Importing this module imports torch. See
``docs/distributed.md``, "gloo on mps".
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future  # type: ignore[attr-defined]  # torch 2.4-2.13; not in the stub

from accelhal.errors import DistributedSetupError

NAME = "hostgloo"
"""The name of :class:`HostStagedGloo` in ``torch.distributed`` (``dist.get_backend()`` returns it)."""

COLLECTIVES = {
    **{
        name: name
        for name in (
            "allreduce",
            "allreduce_coalesced",
            "broadcast",
            "reduce",
            "allgather",
            "allgather_coalesced",
            "allgather_into_tensor_coalesced",
            "gather",
            "scatter",
            "reduce_scatter",
            "alltoall",
            "send",
            "recv",
            "recv_anysource",
            "barrier",
            "monitored_barrier",
            "_allgather_base",
            "_reduce_scatter_base",
            "alltoall_base",
        )
    },
    "all_gather_single": "_allgather_base",
    "reduce_scatter_single": "_reduce_scatter_base",
    "all_to_all_single": "alltoall_base",
}
"""The ``ProcessGroup`` methods served (torch.distributed's functions call them; torch 2.4 the ``_base``
names, later ones the ``_single`` names) and gloo's method for each.

``monitored_barrier`` is reached through the group's own method only: torch's function
refuses the group before it calls it (a backend not named ``gloo`` before torch 2.15, a group
without cpu tensors from 2.15)."""


def gloo_devices() -> list[str]:
    """The device types whose tensors torch's gloo carries (``["cpu", "cuda"]``)."""
    return list(dist.Backend.backend_capability.get("gloo", ["cpu", "cuda"]))


def backend_for(backend: str, device_type: str) -> str:
    """The backend to set up when ``backend`` is asked for on ``device_type``.

    :data:`NAME` where ``backend`` is plain ``gloo`` and gloo does not carry ``device_type``'s
    tensors; ``backend`` itself otherwise.

    Raises:
        DistributedSetupError: ``backend`` gives ``device_type`` to gloo by name
            (``"cpu:gloo,mps:gloo"``), which fails at the first collective.
    """
    if device_type in gloo_devices():
        return backend
    if backend == "gloo":
        return NAME
    pairs = dict(part.strip().split(":", 1) for part in backend.split(",") if ":" in part)
    if pairs.get(device_type, "").strip() == "gloo":
        raise DistributedSetupError(
            f"backend={backend!r} gives {device_type} tensors to gloo, which carries {' and '.join(gloo_devices())} "
            f"tensors only: pass backend='gloo' (accelhal then runs {device_type} collectives on host copies, "
            f"backend {NAME!r}) or backend='cpu:gloo' (collectives on cpu tensors only)",
            variable="backend",
            value=backend,
        )
    return backend


def register(device_type: str, name: str = NAME) -> str:
    """Register :class:`HostStagedGloo` as ``name`` for ``device_type`` and cpu (once per process); return ``name``.

    A vendor-like package may register it under its own name (tests do, for their PrivateUse1 device).
    """
    if name not in dist.Backend.backend_list:
        create = functools.partial(HostStagedGloo, name=name)
        dist.Backend.register_backend(name, create, devices=list(dict.fromkeys([device_type, "cpu"])))
    return name


def _to_host(value: Any, staged: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    """``value`` with every device tensor (in nested lists) replaced by a host copy, recorded in ``staged``."""
    if isinstance(value, torch.Tensor):
        if value.device.type == "cpu":
            return value
        host = value.detach().cpu()
        staged.append((value, host))
        return host
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(item, staged) for item in value)
    return value


def _swapped(value: Any, device_of: dict[int, torch.Tensor]) -> Any:
    """``value`` (a tensor or nested lists of them) with each host copy replaced by its device tensor."""
    if isinstance(value, (list, tuple)):
        return [_swapped(item, device_of) for item in value]
    return device_of.get(id(value), value)


def _completed(work: Any, staged: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    """A finished work whose future holds gloo's result with each host copy replaced by its device tensor.

    The result is read from gloo's future (``Work.result()`` prints torch's deprecation warning).
    """
    device_of = {id(host): device for device, host in staged}
    try:
        result = _swapped(work.get_future().value(), device_of)
    except RuntimeError:  # a work without a future (send, recv, barrier)
        result = [device for device, _ in staged]
    future: torch.futures.Future[list[torch.Tensor]] = torch.futures.Future()
    future.set_result(result)
    return _create_work_from_future(future)


def _staged(name: str, gloo_name: str) -> Any:
    def collective(self: HostStagedGloo, *args: Any, **kwargs: Any) -> Any:
        staged: list[tuple[torch.Tensor, torch.Tensor]] = []
        host_kwargs = {key: _to_host(value, staged) for key, value in kwargs.items()}
        work = getattr(self._gloo, gloo_name)(*_to_host(args, staged), **host_kwargs)
        if not staged:
            return work
        work.wait()
        with torch.no_grad():  # gloo writes a cpu parameter in place without autograd; so does this
            for device_tensor, host in staged:
                device_tensor.copy_(host)
        return _completed(work, staged)

    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = f"gloo's ``{gloo_name}``, on host copies of device tensors (then complete when it returns)."
    return collective


class HostStagedGloo(dist.ProcessGroup):
    """A process group running gloo's collectives, device tensors through host copies."""

    def __init__(self, store: Any, rank: int, size: int, timeout: timedelta, name: str = NAME) -> None:
        """One gloo group on ``store`` (the creator's arguments of ``Backend.register_backend``)."""
        super().__init__(rank, size)  # type: ignore[call-arg]  # torch takes (rank, size); its stub says (store, rank, size)
        self._name = name
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)

    def getBackendName(self) -> str:  # noqa: N802 - torch's name
        """The registered name (:data:`NAME`)."""
        return self._name


for _name, _gloo_name in COLLECTIVES.items():
    setattr(HostStagedGloo, _name, _staged(_name, _gloo_name))
