"""transformers' ``TrainingArguments`` on the active backend: the device the Trainer trains on.

``TrainingArguments._setup_devices`` builds Accelerate's ``PartialState`` (whose device the
adapter chooses), then, for a single-process run, picks the device again through its own
chain of vendor checks, falling back to ``cpu``. The replacement keeps transformers' answer
where it is the state's device, and otherwise takes the state's device (with one device per
process: ``n_gpu`` 1; on the host ``n_gpu`` is 0 in every run, as Accelerate's ``use_cpu`` path gives).

Patched when ``transformers.training_args`` exists: at :func:`~accelhal.compat.accelerate.install`
if it is imported already, else as soon as it is imported (:class:`TrainingArgumentsHook`).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import torch
from accelerate.utils import DistributedType

import accelhal
from accelhal.compat import _import_hook
from accelhal.compat._placement import is_host
from accelhal.compat.accelerate import _patches, _shape

MODULE = "transformers.training_args"
"""The module defining ``TrainingArguments``."""
ATTRIBUTE = "_setup_devices"
"""``TrainingArguments``' cached property that chooses the device."""


def setup_devices(original: Any) -> Any:
    """``TrainingArguments._setup_devices``: transformers' device where it is the state's, else the state's.

    ``original`` is the release's cached property (``functools.cached_property``, or
    transformers' own ``property`` subclass before 4.57.0: :data:`~._releases.TRANSFORMERS_SHAPES`);
    the replacement is one of the same type. On the host ``n_gpu`` is 0, as with ``use_cpu=True``.
    """
    choose = _shape.function(original)

    def _setup_devices(self: Any) -> torch.device:
        device: torch.device = choose(self)
        state = self.distributed_state
        if self.use_cpu or state is None:
            return device
        acc = accelhal.get_accelerator()
        if state.device.type != acc.device_type:
            return device
        host = is_host(acc)
        if host:
            self._n_gpu = 0
        if state.distributed_type is not DistributedType.NO or device == state.device:
            return device
        if not host:
            self._n_gpu = 1
        chosen: torch.device = state.device
        return chosen

    _setup_devices.__doc__ = choose.__doc__
    return type(original)(_setup_devices)


def refusing(refusal: Exception) -> Any:
    """A replacement of ``TrainingArguments._setup_devices`` that raises ``refusal`` where the Trainer reads the device.

    For a transformers the adapter cannot patch (outside its range, or in another shape): its
    ``TrainingArguments(...)``, ``.device`` and ``.n_gpu`` raise, naming transformers and the range, rather
    than train on a device accelhal did not choose; the rest of transformers and Accelerate's own use run.
    """

    def _setup_devices(self: Any) -> torch.device:
        raise refusal

    return property(_setup_devices, doc=f"Refused: {refusal}")


def patch(module: ModuleType, refusal: Exception | None = None) -> None:
    """Patch ``module.TrainingArguments`` (recorded with the adapter's other patches); refusing where ``refusal``."""
    cls = module.TrainingArguments
    replace = _patches.ClassPatch.of(cls, ATTRIBUTE, setup_devices if refusal is None else lambda _: refusing(refusal))
    set_name = getattr(replace.replacement, "__set_name__", None)
    if set_name is not None:
        set_name(cls, ATTRIBUTE)  # as the class statement would
    _patches.apply([replace])


class TrainingArgumentsHook(_import_hook.AfterImport):
    """Patches ``TrainingArguments`` as soon as :data:`MODULE` has executed."""

    target = MODULE

    def __init__(self, refusal: Exception | None = None) -> None:
        """Patch with the adapter's device choice, or with ``refusal`` (:func:`refusing`)."""
        self.refusal = refusal

    def after(self, module: ModuleType) -> None:
        """Patch the freshly executed module."""
        patch(module, self.refusal)


def loaded() -> ModuleType | None:
    """:data:`MODULE` if it has been imported, else ``None``."""
    return sys.modules.get(MODULE)
