"""The test device's collectives: accelhal's host-staged gloo, registered as a vendor registers its own (hccl, cncl).

gloo refuses tensors of a PrivateUse1 device (``ProcessGroupGloo::allreduce: unsupported
device type testdev``), and torch.distributed accepts a process group for a device only
from a registered backend. :class:`accelhal.distributed.host_staging.HostStagedGloo` is
such a backend (every collective runs gloo's on host copies of the device tensors), the one
``accelhal.distributed.init_process_group`` sets up for gloo on mps.

:func:`register` registers it under :data:`NAME` (or a vendor's name: ``hccl``) for the
device type (and cpu), so ``init_process_group(NAME)`` works and
``torch.distributed.Backend.default_device_backend_map`` names it for the device, where
accelhal's generic backend finds its communication backend.
:func:`tests.privateuse1.device.load` calls it when ``ACCELHAL_TESTDEV_COLLECTIVES=1``.
"""

from __future__ import annotations

from accelhal.distributed import host_staging

NAME = host_staging.NAME
"""The backend's name in ``torch.distributed`` (``init_process_group("hostgloo")``)."""


def register(device_type: str, name: str = NAME) -> None:
    """Register the host-staged gloo as ``name`` for ``device_type`` and cpu (once per process)."""
    host_staging.register(device_type, name)
