"""The acme accelerator: the cpu backend under another name."""

from accelhal_backends.cpu.accelerator import CpuAccelerator


class AcmeAccelerator(CpuAccelerator):
    _name = "acme"
    _visible_devices_envs = ("ACME_VISIBLE_DEVICES",)
