"""What the adapter replaces in Accelerate and transformers, put in place and taken back as one.

Every replacement is listed in :func:`patches` (Accelerate) and :mod:`._trainer`
(transformers); :mod:`._patches` records what is in place.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Mapping

from accelerate import accelerator, checkpointing, state
from accelerate.utils import memory, modeling

import accelhal
from accelhal.compat import _import_hook
from accelhal.compat._releases import ReleaseRange, ShapeTable
from accelhal.compat.accelerate import _memory, _patches, _prepare, _rng, _shape, _state, _trainer
from accelhal.compat.accelerate._releases import (
    MEMBERS,
    SHAPES,
    SUPPORTED,
    SUPPORTED_TRANSFORMERS,
    TRANSFORMERS_MEMBERS,
    TRANSFORMERS_SHAPES,
    Shape,
    transformers_refusal,
)
from accelhal.errors import ConfigurationError, ContractError

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


def _shape_problem(supported: ReleaseRange, table: ShapeTable[Shape], found: Mapping[str, str]) -> ContractError | None:
    """Where ``found`` is not the shape ``table`` gives the installed release: the :class:`~accelhal.ContractError`."""
    release = supported.installed()
    expected = table.shape_for(release)
    differs = [
        f"{key} is {shape!r}, not {expected.get(key)!r}" for key, shape in found.items() if shape != expected.get(key)
    ]
    if not differs:
        return None
    return ContractError(
        f"{supported.distribution} {release} is not the shape accelhal.compat.accelerate knows for it: "
        f"{'; '.join(differs)} (tested from {supported.floor} to {supported.newest}; docs/accelerate.md)"
    )


def check_shapes() -> None:
    """What the adapter replaces in Accelerate is in the shape of the installed release.

    Raises :class:`~accelhal.ContractError` naming each member that differs. Once installed,
    the members are the adapter's own, and nothing is checked. transformers is checked where
    the Trainer chooses its device (:func:`trainer_refusal`).
    """
    if _patches.any_applied():
        return
    problem = _shape_problem(SUPPORTED, SHAPES, _shape.loaded(MEMBERS))
    if problem is not None:
        raise problem


def trainer_refusal() -> Exception | None:
    """Why the Trainer cannot choose its device through the adapter; None where it can (or without transformers).

    The installed transformers outside its range (:class:`~accelhal.UnsupportedReleaseError`), or
    ``TrainingArguments`` in another shape than its release has (:class:`~accelhal.ContractError`),
    both read from the installed files (nothing is imported).
    """
    if importlib.util.find_spec("transformers") is None:
        return None
    refused = transformers_refusal()
    if refused is not None:
        return refused
    return _shape_problem(SUPPORTED_TRANSFORMERS, TRANSFORMERS_SHAPES, _shape.installed(TRANSFORMERS_MEMBERS))


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
        _check_no_state_yet()
        refusal = trainer_refusal()
        _patches.apply(patches())
        try:
            training_args = _trainer.loaded()
            if training_args is None:
                _import_hook.arm(_trainer.TrainingArgumentsHook(refusal))
            else:
                _trainer.patch(training_args, refusal)
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
