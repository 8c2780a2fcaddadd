"""``Accelerator.prepare`` keeps an optimizer on the parameters its model trains.

Moving a module to a device whose tensors torch cannot shallow-copy into the parameters'
own (every PrivateUse1 device: the generic backend's, out-of-tree vendors') replaces the
parameters (``Module.to``; ``torch._has_compatible_shallow_copy_type``), so an optimizer
made before ``prepare`` would step the old host copies and the model would not train.
Accelerate re-points the optimizer for XLA, where the same happens; the replacement does
it wherever a model's parameters changed, with Accelerate's own ``_switch_parameters``.
Engines that place parameters themselves (DeepSpeed, FSDP, Megatron-LM, and XLA, which
Accelerate handles) are left alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
from accelerate.optimizer import AcceleratedOptimizer
from accelerate.utils import DistributedType, extract_model_from_parallel

_PLACED_BY_ENGINE = (DistributedType.XLA, DistributedType.DEEPSPEED, DistributedType.FSDP, DistributedType.MEGATRON_LM)


def _parameters(objects: Sequence[Any]) -> dict[tuple[int, str], torch.nn.Parameter]:
    """Each module's parameters, by the module's position in ``objects`` and the parameter's name."""
    return {
        (position, name): parameter
        for position, obj in enumerate(objects)
        if isinstance(obj, torch.nn.Module)
        for name, parameter in extract_model_from_parallel(obj).named_parameters()
    }


def prepare(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Accelerator.prepare``: Accelerate's, then its optimizers switched to the parameters that replaced theirs."""

    @functools.wraps(original)
    def _prepare(self: Any, *args: Any, device_placement: list[bool] | None = None) -> Any:
        if self.distributed_type in _PLACED_BY_ENGINE:
            return original(self, *args, device_placement=device_placement)
        before = _parameters(args)
        result = original(self, *args, device_placement=device_placement)
        prepared = result if len(args) > 1 else (result,)
        after = _parameters(prepared)
        moved = {old: after[key] for key, old in before.items() if key in after and after[key] is not old}
        if moved:
            for obj in prepared:
                if isinstance(obj, AcceleratedOptimizer):
                    obj._switch_parameters(moved)
        return result

    return _prepare
