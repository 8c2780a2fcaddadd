"""What the adapter replaces in Accelerate and transformers, put in place and taken back as one.

Every replacement is listed in :func:`patches` (Accelerate) and :mod:`._trainer`
(transformers); :mod:`._patches` records what is in place.
"""

from __future__ import annotations

import inspect
import threading

from accelerate import accelerator, checkpointing, state
from accelerate.utils import memory, modeling

import accelhal
from accelhal.compat import _import_hook
from accelhal.compat.accelerate import _memory, _patches, _prepare, _rng, _state, _trainer
from accelhal.errors import ConfigurationError, ContractError

_PREPARE_BACKEND_PARAMETERS = ["self", "cpu", "sagemaker_dp", "backend"]
"""``PartialState._prepare_backend``'s parameters since Accelerate 0.2x; the adapter replaces it whole."""

_lock = threading.Lock()


def patches() -> list[_patches.Patch]:
    """The replacements in Accelerate, built over the functions and attributes in place now."""
    partial, accelerator_state = state.PartialState, state.AcceleratorState
    return [
        _patches.ClassPatch.of(partial, "_prepare_backend", _state.prepare_backend),
        _patches.ClassPatch.of(partial, "set_device", _state.set_device),
        _patches.ClassPatch.of(partial, "default_device", _state.default_device),
        _patches.ClassPatch.of(accelerator_state, "__init__", _state.accelerator_state_init),
        _patches.ClassPatch.of(accelerator.Accelerator, "prepare", _prepare.prepare),
        _patches.FunctionPatch.of(modeling, "get_max_memory", _memory.get_max_memory),
        _patches.FunctionPatch.of(memory, "clear_device_cache", _memory.clear_device_cache),
        _patches.FunctionPatch.of(checkpointing, "save_accelerator_state", _rng.save_accelerator_state),
        _patches.FunctionPatch.of(checkpointing, "load_accelerator_state", _rng.load_accelerator_state),
    ]


def _check_accelerate() -> None:
    """The seams the adapter replaces are the ones it was written for; a :class:`~accelhal.ContractError` otherwise."""
    import accelerate

    found = list(inspect.signature(state.PartialState._prepare_backend).parameters)
    default_device = state.PartialState.__dict__.get("default_device")
    if found != _PREPARE_BACKEND_PARAMETERS or not isinstance(default_device, property):
        raise ContractError(
            f"accelerate {accelerate.__version__}'s PartialState is not the one accelhal.compat.accelerate replaces "
            f"(_prepare_backend{tuple(found)}, a default_device property); it supports accelerate 1.x from 1.15 "
            "(docs/accelerate.md)"
        )


def _check_no_state_yet() -> None:
    if state.PartialState._shared_state:
        device = state.PartialState._shared_state.get("device")
        raise ConfigurationError(
            f"Accelerate's state already exists (on {device}): call install() before the first Accelerator(), "
            "PartialState() or TrainingArguments(), or reset it first "
            "(accelerate.state.AcceleratorState._reset_state(reset_partial_state=True))",
            variable="install",
            value=str(device),
        )


def install() -> bool:
    """Put every replacement in place; False when they are in place already."""
    with _lock:
        if _patches.any_applied():
            return False
        accelhal.get_accelerator()  # a selection error surfaces here, before anything changes
        _check_accelerate()
        _check_no_state_yet()
        _patches.apply(patches())
        try:
            training_args = _trainer.loaded()
            if training_args is None:
                _import_hook.arm(_trainer.TrainingArgumentsHook())
            else:
                _trainer.patch(training_args)
        except BaseException:
            _patches.revert_all()
            raise
        return True


def uninstall() -> bool:
    """Take every replacement back and the transformers hook down; False when nothing was in place."""
    with _lock:
        was_installed = _patches.any_applied()
        _import_hook.disarm(_trainer.TrainingArgumentsHook)
        _patches.revert_all()
        return was_installed


def is_installed() -> bool:
    """Whether the replacements are in place."""
    return _patches.any_applied()
