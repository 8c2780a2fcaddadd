"""The loopback accelerator: accelhal's cpu accelerator under a new backend name."""

from __future__ import annotations

from accelhal_backends.cpu.accelerator import CpuAccelerator
from accelhal_loopback import SPEC


class LoopbackAccelerator(CpuAccelerator):
    """The host CPU, presented as the ``loopback`` backend (tensors live on ``cpu``)."""

    spec = SPEC  # its identity (name, device type, collectives) is the spec's
