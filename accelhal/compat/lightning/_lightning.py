"""The accelerator for the ``lightning`` package's ``lightning.pytorch``."""

from __future__ import annotations

from lightning.pytorch.accelerators import Accelerator

from accelhal.compat.lightning._common import AccelhalLightningAccelerator


class AccelhalAccelerator(AccelhalLightningAccelerator, Accelerator):
    """A ``lightning.pytorch`` accelerator over the active accelhal backend (or ``backend``, made active).

    >>> trainer = Trainer(accelerator=AccelhalAccelerator(), devices=2)
    """

    _package = "lightning.pytorch"
