"""The test device's collectives: gloo through host copies, registered as a vendor registers its own (hccl, cncl).

gloo refuses tensors of a PrivateUse1 device (``ProcessGroupGloo::allreduce: unsupported
device type testdev``), and torch.distributed accepts a process group for a device only
from a registered backend. :class:`HostGloo` is that backend: every collective copies the
device tensors it is given to host memory, runs gloo's collective of the same name on the
copies, waits, and copies the results back into the device tensors (cpu tensors go to
gloo as they are). It is synchronous: the returned work is complete.

:func:`register` registers it under :data:`NAME` (or a vendor's name: ``hccl``) for the
device type (and cpu), so ``init_process_group(NAME)`` works and
``torch.distributed.Backend.default_device_backend_map`` names it for the device, where
accelhal's generic backend finds its communication backend.
:func:`tests.privateuse1.device.load` calls it when ``ACCELHAL_TESTDEV_COLLECTIVES=1``.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

NAME = "hostgloo"
"""The backend's name in ``torch.distributed`` (``init_process_group("hostgloo")``)."""

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
            "gather",
            "scatter",
            "reduce_scatter",
            "alltoall",
            "send",
            "recv",
            "recv_anysource",
            "barrier",
            "monitored_barrier",
        )
    },
    "all_gather_single": "_allgather_base",
    "reduce_scatter_single": "_reduce_scatter_base",
    "all_to_all_single": "alltoall_base",
}
"""The ``ProcessGroup`` methods served (called by ``torch.distributed``'s functions) and gloo's method for each."""


def _to_host(value: Any, staged: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    """``value`` with every device tensor (in nested lists) replaced by a host copy, recorded in ``staged``."""
    if isinstance(value, torch.Tensor):
        if value.device.type == "cpu":
            return value
        host = value.cpu()
        staged.append((value, host))
        return host
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(item, staged) for item in value)
    return value


def _staged(name: str, gloo_name: str) -> Any:
    def collective(self: HostGloo, *args: Any, **kwargs: Any) -> Any:
        staged: list[tuple[torch.Tensor, torch.Tensor]] = []
        host_kwargs = {key: _to_host(value, staged) for key, value in kwargs.items()}
        work = getattr(self._gloo, gloo_name)(*_to_host(args, staged), **host_kwargs)
        work.wait()
        for device_tensor, host in staged:
            device_tensor.copy_(host)
        return work

    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = f"gloo's ``{gloo_name}`` on host copies of the device tensors; complete when it returns."
    return collective


class HostGloo(dist.ProcessGroup):
    """A process group running gloo's collectives on host copies of device tensors."""

    def __init__(self, store: Any, rank: int, size: int, timeout: timedelta, name: str = NAME) -> None:
        super().__init__(rank, size)  # type: ignore[call-arg]  # torch 2.13 takes (rank, size); its stub says (store, rank, size)
        self._name = name
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)

    def getBackendName(self) -> str:
        return self._name


for _name, _gloo_name in COLLECTIVES.items():
    setattr(HostGloo, _name, _staged(_name, _gloo_name))


def register(device_type: str, name: str = NAME) -> None:
    """Register :class:`HostGloo` as ``name`` for ``device_type`` and cpu (once per process)."""
    if name not in dist.Backend.backend_list:
        create = functools.partial(HostGloo, name=name)
        dist.Backend.register_backend(name, create, devices=[device_type, "cpu"])
