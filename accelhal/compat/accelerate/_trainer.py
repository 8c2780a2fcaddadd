"""transformers' ``TrainingArguments`` on the active backend: the device the Trainer trains on.

``TrainingArguments._setup_devices`` builds Accelerate's ``PartialState`` (whose device the
adapter chooses), then, for a single-process run, picks the device again through its own
chain of vendor checks, falling back to ``cpu``. The replacement keeps transformers' answer
where it is the state's device, and otherwise takes the state's device (with one device per
process: ``n_gpu`` 1, or 0 on the host).

Patched when ``transformers.training_args`` exists: at :func:`~accelhal.compat.accelerate.install`
if it is imported already, else as soon as it is imported (:class:`TrainingArgumentsHook`).
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

import torch
from accelerate.utils import DistributedType

import accelhal
from accelhal.compat import _import_hook
from accelhal.compat._placement import is_host
from accelhal.compat.accelerate import _patches

MODULE = "transformers.training_args"
"""The module defining ``TrainingArguments``."""
ATTRIBUTE = "_setup_devices"
"""``TrainingArguments``' cached property that chooses the device."""


def setup_devices(original: functools.cached_property[torch.device]) -> functools.cached_property[torch.device]:
    """``TrainingArguments._setup_devices``: transformers' device where it is the state's, else the state's."""
    choose = original.func

    def _setup_devices(self: Any) -> torch.device:
        device = choose(self)
        state = self.distributed_state
        if self.use_cpu or state is None or state.distributed_type is not DistributedType.NO or device == state.device:
            return device
        acc = accelhal.get_accelerator()
        if state.device.type != acc.device_type:
            return device
        self._n_gpu = 0 if is_host(acc) else 1
        chosen: torch.device = state.device
        return chosen

    _setup_devices.__doc__ = choose.__doc__
    return functools.cached_property(_setup_devices)


def patch(module: ModuleType) -> None:
    """Patch ``module.TrainingArguments`` (recorded with the adapter's other patches)."""
    cls = module.TrainingArguments
    replace = _patches.ClassPatch.of(cls, ATTRIBUTE, setup_devices)
    replace.replacement.__set_name__(cls, ATTRIBUTE)  # as the class statement would
    _patches.apply([replace])


class TrainingArgumentsHook(_import_hook.AfterImport):
    """Patches ``TrainingArguments`` as soon as :data:`MODULE` has executed."""

    target = MODULE

    def after(self, module: ModuleType) -> None:
        """Patch the freshly executed module."""
        patch(module)


def loaded() -> ModuleType | None:
    """:data:`MODULE` if it has been imported, else ``None``."""
    return sys.modules.get(MODULE)
