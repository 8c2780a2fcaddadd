"""Accelerate's process state on the active backend: device, distributed type, communication backend, precision.

Accelerate decides these in ``PartialState`` with a fixed chain of vendor checks; the
replacements here (``PartialState.default_device``, ``set_device`` and ``_prepare_backend``;
``AcceleratorState.__init__``) answer from the contract instead, and name no vendor.
``cpu=True`` (``ACCELERATE_USE_CPU``), XLA and SageMaker keep Accelerate's own code. What each
answers: ``docs/accelerate.md``, "What comes from the contract".
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from typing import Any

import torch
from accelerate import state as accelerate_state
from accelerate.utils import DistributedType, is_torch_xla_available

import accelhal
from accelhal.compat._placement import is_host, process_device
from accelhal.contract.accelerator import Accelerator
from accelhal.errors import ConfigurationError, DistributedSetupError
from accelhal.launch.environment import read_launch_env

logger = logging.getLogger("accelhal")

MIXED_DTYPES = {"fp16": (torch.float16, "is_fp16_supported"), "bf16": (torch.bfloat16, "is_bf16_supported")}
"""Accelerate's autocasting precisions: each one's dtype, and the contract member saying it is supported."""

_OWN_PRECISION = (DistributedType.DEEPSPEED, DistributedType.MEGATRON_LM)
"""Distributed types whose engine handles mixed precision itself (Accelerate does not autocast them)."""


def distributed_type_for(device_type: str) -> DistributedType:
    """Accelerate's multi-process type for ``device_type``.

    Its own ``MULTI_<TYPE>`` member where Accelerate has one (``MULTI_CPU``, ``MULTI_NPU``,
    ...), else ``MULTI_GPU``: Accelerate's one-device-per-process DDP path, which it
    otherwise takes for ``cuda``.
    """
    return DistributedType.__members__.get(f"MULTI_{device_type.upper()}", DistributedType.MULTI_GPU)


def communication_backend(acc: Accelerator) -> str:
    """The backend's ``torch.distributed`` backend; a :class:`~accelhal.DistributedSetupError` where it has none."""
    name = acc.communication_backend_name()
    if not name:
        raise DistributedSetupError(
            f"the {acc.name} backend has no torch.distributed backend (communication_backend_name() is ''), "
            "so Accelerate cannot start a multi-process run on it; register one for the device type "
            f"{acc.device_type!r} or pass PartialState(backend=...)",
            variable="backend",
            value=name,
        )
    return name


def _launched_by_torch() -> bool:
    """Whether torch's variables are set, ``LOCAL_RANK`` among them (torchrun, ``accelerate launch``).

    Accelerate starts the process group of a device run only then.
    """
    env = read_launch_env()
    return env.source == "torchrun" and "local_rank" in dict(env.variables)


def prepare_backend(original: Callable[..., Any]) -> Callable[..., Any]:
    """``PartialState._prepare_backend``: ``(backend, distributed type)`` from the active backend."""

    @functools.wraps(original)
    def _prepare_backend(
        self: Any, cpu: bool = False, sagemaker_dp: bool = False, backend: str | None = None
    ) -> tuple[str | None, DistributedType]:
        if cpu or sagemaker_dp or is_torch_xla_available():
            return original(self, cpu, sagemaker_dp, backend)  # type: ignore[no-any-return]
        acc = accelhal.get_accelerator()
        if is_host(acc):
            # Accelerate's own rule for a multi-process host run (its MULTI_CPU path reads MPI's variables too).
            distributed_type = original(self, True, False, backend)[1]
        elif _launched_by_torch():
            distributed_type = distributed_type_for(acc.device_type)
        else:
            distributed_type = DistributedType.NO
        if distributed_type is DistributedType.NO:
            return backend, distributed_type
        try:
            return backend or communication_backend(acc), distributed_type
        except DistributedSetupError:
            accelerate_state.PartialState._reset_state()  # no half-made state left for the next PartialState()
            raise

    return _prepare_backend


def set_device(original: Callable[..., Any]) -> Callable[..., Any]:
    """``PartialState.set_device``: the backend's device, one per process by local rank when launched.

    On the host launched (``MULTI_CPU``, Accelerate's own host rule) Accelerate's answer:
    ``torch.device("cpu", local_rank % torch.cpu.device_count())``, ``cpu:0`` on every rank.
    """

    @functools.wraps(original)
    def _set_device(self: Any) -> None:
        if self.device is not None:
            return
        host_launched = self.distributed_type is DistributedType.MULTI_CPU and is_host(accelhal.get_accelerator())
        if self._cpu or host_launched or self.distributed_type is DistributedType.XLA:
            original(self)
            return
        local_rank = None if self.distributed_type is DistributedType.NO else self.local_process_index
        self.device = process_device(accelhal.get_accelerator(), local_rank)

    return _set_device


def default_device(original: property) -> property:
    """``PartialState.default_device``: the backend's current device."""

    def _default_device(self: Any) -> torch.device:
        return process_device(accelhal.get_accelerator())

    return property(_default_device, doc=original.__doc__)


def autocast_problem(acc: Accelerator, precision: str) -> str | None:
    """Why the backend cannot autocast to ``precision`` (``"fp16"``/``"bf16"``), or ``None`` when it can.

    Asks the contract whether the dtype is supported, then builds torch's autocast for the
    device type (which checks what the device registered for autocasting).
    """
    dtype, supported = MIXED_DTYPES[precision]
    if not getattr(acc, supported)():
        return f"{supported}() is False"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.autocast(acc.device_type, dtype=dtype)
        except Exception as exc:  # torch refuses a device type in several ways (RuntimeError, AssertionError)
            return f"torch's autocast on {acc.device_type!r} fails: {type(exc).__name__}: {' '.join(str(exc).split())}"
    if caught:
        return f"torch's autocast on {acc.device_type!r} turns itself off: {' '.join(str(caught[0].message).split())}"
    return None


def check_mixed_precision(state: Any) -> None:
    """Refuse ``state``'s mixed precision when the run is on the backend and the backend cannot autocast to it.

    On the host, Accelerate's own rule stands (it trains ``fp16`` in float32 there, and
    autocasts ``bf16``); a warning says so for ``fp16``.
    """
    acc = accelhal.get_accelerator()
    if state._cpu or state.device.type != acc.device_type or state.distributed_type in _OWN_PRECISION:
        return
    precision = state.mixed_precision
    if precision not in MIXED_DTYPES:
        return
    if is_host(acc):
        if precision == "fp16":
            logger.warning(
                "accelhal: mixed_precision='fp16' on the %s backend (the host): Accelerate does not autocast fp16 "
                "there and trains in float32, as Accelerator(cpu=True) does; choose 'bf16' for mixed precision",
                acc.name,
            )
        return
    problem = autocast_problem(acc, precision)
    if problem is not None:
        others = [p for p in MIXED_DTYPES if p != precision and autocast_problem(acc, p) is None]
        choices = " or ".join(repr(p) for p in ["no", *others])
        raise ConfigurationError(
            f"mixed_precision={precision!r} autocasts to {MIXED_DTYPES[precision][0]}, which the {acc.name} backend "
            f"lacks: {problem}; choose {choices}",
            variable="mixed_precision",
            value=precision,
        )


def accelerator_state_init(original: Callable[..., Any]) -> Callable[..., Any]:
    """``AcceleratorState.__init__``: after Accelerate's, a new state's mixed precision is checked."""

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 (it is the class's __init__)
        fresh = not accelerate_state.is_initialized()
        original(self, *args, **kwargs)
        if fresh:
            try:
                check_mixed_precision(self)
            except ConfigurationError:
                accelerate_state.AcceleratorState._reset_state()  # no half-made state left for the next Accelerator()
                raise

    return __init__
