"""The accelerator for the ``pytorch_lightning`` package (the same code under its older name)."""

from __future__ import annotations

from pytorch_lightning.accelerators import Accelerator

from accelhal.compat.lightning._common import AccelhalLightningAccelerator


class AccelhalAccelerator(AccelhalLightningAccelerator, Accelerator):
    """A ``pytorch_lightning`` accelerator over the active accelhal backend (or ``backend``, made active).

    >>> trainer = pytorch_lightning.Trainer(accelerator=AccelhalAccelerator(), devices=2)
    """

    _package = "pytorch_lightning"
