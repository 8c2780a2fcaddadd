"""The hpu accelerator: Intel Gaudi through ``habana_frameworks.torch.hpu``.

Differs from the shared base: RNG functions live in ``hpu.random``; graphs are
``HPUGraph`` captured with ``hpu.graph(g, stream=...)`` (no memory pool); capacity is the
allocator's ``Limit``; ``empty_cache`` is a no-op (Gaudi's allocator keeps its pool); float16
needs Gaudi 2 or later; the device orders work across streams and blocks on memory pressure
by itself.

Fixed from DeepSpeed: constructing it changes nothing process-wide (no
``torch.use_deterministic_algorithms(True)``, no ``PT_HPU_*`` variables written — set
those yourself if you want them); devices are named ``hpu:<index>``; the visible-devices
variable is ``HABANA_VISIBLE_MODULES``, not ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import torch

from accelhal.contract.device_module import DeviceModuleAccelerator
from accelhal_backends.catalog import HPU as SPEC


class HpuAccelerator(DeviceModuleAccelerator):
    """Intel Gaudi through ``habana_frameworks.torch.hpu``."""

    spec = SPEC

    _rng_namespace = "random"
    _resolves_data_dependency = True
    _handles_memory_backpressure = True

    def empty_cache(self) -> None:
        """Nothing to release: Gaudi's allocator keeps its pool."""
        return None

    def total_memory(self, device_index: int | None = None) -> int:
        """The allocator's ``Limit`` (the device memory usable by this process)."""
        return int(self._m.memory_stats(self._index(device_index))["Limit"])

    def is_bf16_supported(self) -> bool:
        """True where a Gaudi is visible (every generation computes in bfloat16)."""
        return self.is_available()

    def is_fp16_supported(self) -> bool:
        """True from Gaudi 2 on (first-generation Gaudi has no float16)."""
        return self.is_available() and str(self._m.get_device_name()).upper() != "GAUDI"

    def capture_to_graph(
        self, graph: Any, pool: Any = None, stream: Any = None
    ) -> contextlib.AbstractContextManager[Any]:
        """``hpu.graph(graph, stream=stream)``; Gaudi has no graph memory pools, so ``pool`` is ignored."""
        context: contextlib.AbstractContextManager[Any] = self._m.graph(graph, stream=stream)
        return context

    def _torch_pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """Page-lock for the HPU (pinning there needs the device named)."""
        return tensor.pin_memory(torch.device(self.device_type))

    def _torch_empty_pinned(self, tensor: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        """Allocate, then pin (the allocation API cannot name the HPU)."""
        return self._torch_pin_memory(tensor.new_empty(tuple(shape)))
