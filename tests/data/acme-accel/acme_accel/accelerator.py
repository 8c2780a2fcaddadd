"""The acme accelerator: the cpu backend under another name."""

from accelhal_backends.cpu.accelerator import CpuAccelerator
from acme_accel import SPEC


class AcmeAccelerator(CpuAccelerator):
    spec = SPEC
