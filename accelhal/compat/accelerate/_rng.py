"""The device's random generators in Accelerate's checkpoints (``Accelerator.save_state``/``load_state``).

Accelerate saves and restores the generator states of the device types it knows by name,
and no other. The replacements of ``save_accelerator_state`` and ``load_accelerator_state``
run Accelerate's own, then save (restore) the state of each of the backend's devices
(``get_rng_state(i)``/``set_rng_state(state, i)``) in ``accelhal_rng_states_<process>.pt``
beside Accelerate's ``random_states_<process>.pkl``. The host backend has no device
generator beyond torch's, which Accelerate saves itself.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import accelhal
from accelhal.compat._placement import is_host

logger = logging.getLogger("accelhal")

FILE_NAME = "accelhal_rng_states_{process_index}.pt"
"""The file, in the checkpoint directory, holding one process's device generator states."""


def _file(arguments: inspect.BoundArguments, directory: str) -> Path:
    return Path(arguments.arguments[directory]) / FILE_NAME.format(process_index=arguments.arguments["process_index"])


def save_accelerator_state(original: Callable[..., Any]) -> Callable[..., Any]:
    """``save_accelerator_state``: Accelerate's checkpoint, then the backend's device generator states."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def _save_accelerator_state(*args: Any, **kwargs: Any) -> Any:
        directory = original(*args, **kwargs)
        acc = accelhal.get_accelerator()
        if not is_host(acc):
            states = [acc.get_rng_state(index) for index in range(acc.device_count())]
            saved = {"device_type": acc.device_type, "states": states}
            torch.save(saved, _file(signature.bind(*args, **kwargs), "output_dir"))
        return directory

    return _save_accelerator_state


def load_accelerator_state(original: Callable[..., Any]) -> Callable[..., Any]:
    """``load_accelerator_state``: Accelerate's checkpoint, then the device generator states saved beside it."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def _load_accelerator_state(*args: Any, **kwargs: Any) -> Any:
        override_attributes = original(*args, **kwargs)
        acc = accelhal.get_accelerator()
        path = _file(signature.bind(*args, **kwargs), "input_dir")
        if not is_host(acc) and path.is_file():
            saved = torch.load(path, weights_only=True)
            if saved["device_type"] != acc.device_type:
                logger.warning(
                    "accelhal: %s holds %s generator states; the %s backend's generators are not restored",
                    path,
                    saved["device_type"],
                    acc.name,
                )
                return override_attributes
            for index, state in enumerate(saved["states"][: acc.device_count()]):
                acc.set_rng_state(state, index)
        return override_attributes

    return _load_accelerator_state
