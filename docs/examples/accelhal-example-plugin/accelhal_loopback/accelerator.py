"""The loopback accelerator: accelhal's cpu accelerator under a new backend name."""

from __future__ import annotations

from accelhal_backends.cpu.accelerator import CpuAccelerator


class LoopbackAccelerator(CpuAccelerator):
    """The host CPU, presented as the ``loopback`` backend (tensors live on ``cpu``)."""

    _name = "loopback"
