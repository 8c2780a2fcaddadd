"""The mps accelerator: PyTorch's MPS backend as it really is.

:class:`MpsAccelerator` has one device (index 0) and no user streams or graphs (``Stream`` is ``None``,
``create_graph()`` ``None``; the capabilities say so); memory is unified, so pinning is a no-op, and the peaks
are sampled, as on the cpu backend. Importing this module imports torch. What each member answers:
``docs/backends.md``, "mps".
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import Any

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_index
from accelhal.contract.device_module import DeviceModuleAccelerator
from accelhal.contract.spec import Capability
from accelhal_backends.catalog import MPS as SPEC


def _macos_major() -> int:
    release = platform.mac_ver()[0]
    return int(release.split(".")[0]) if release else 0


class MpsAccelerator(DeviceModuleAccelerator):
    """Apple-silicon GPUs through ``torch.mps``."""

    spec = SPEC

    _is_synchronized_device = True
    _uses_host_timers = True
    _resolves_data_dependency = True
    _handles_memory_backpressure = True
    _torch_pins_host_memory = False
    capabilities = frozenset({Capability.EVENTS, Capability.EVENT_TIMING, Capability.DEVICE_MEMORY_STATS})

    # no user streams, no graphs, no vendor profiler ranges: the contract's answers
    Stream = Accelerator.Stream
    stream = Accelerator.stream
    current_stream = Accelerator.current_stream
    default_stream = Accelerator.default_stream
    lazy_call = Accelerator.lazy_call

    def __init__(self) -> None:
        """Resolve ``torch.mps``; start peak tracking at zero."""
        super().__init__()
        self._peaks = {"allocated": 0, "reserved": 0}

    # ------------------------------------------------------------------ one device
    def set_device(self, device_index: int) -> None:
        """Only device 0 exists; any other index raises ``ValueError``."""
        if check_device_index(device_index) != 0:
            raise ValueError(f"mps has one device (index 0), got device_index={device_index}")

    def current_device(self) -> int:
        """Always 0."""
        return 0

    def current_device_name(self) -> str:
        """``"mps:0"``."""
        return "mps:0"

    def synchronize(self, device_index: int | None = None) -> None:
        """Wait for all queued Metal work (there is one device)."""
        self._m.synchronize()

    def device_description(self, device_index: int) -> str:
        """The Mac's processor name (Apple GPUs have no separate name in torch)."""
        return f"Apple GPU ({platform.processor() or platform.machine()})"

    def device_capability(self, device_index: int) -> str | None:
        """None: MPS has no compute-capability number."""
        return None

    # ------------------------------------------------------------------ RNG
    def set_rng_state(self, new_state: torch.Tensor, device_index: int | None = None) -> None:
        """Restore the MPS generator's state."""
        self._m.set_rng_state(new_state)

    def get_rng_state(self, device_index: int | None = None) -> torch.Tensor:
        """The MPS generator's state."""
        state: torch.Tensor = self._m.get_rng_state()
        return state

    def manual_seed_all(self, seed: int) -> None:
        """Seed the MPS generator (the only one)."""
        self._m.manual_seed(seed)

    def initial_seed(self) -> int:
        """The initial seed of the MPS generator."""
        return int(self._m._get_default_mps_generator().initial_seed())

    def default_generator(self, device_index: int) -> torch.Generator:
        """The MPS generator (device 0 only)."""
        self.set_device(device_index)
        generator: torch.Generator = self._m._get_default_mps_generator()
        return generator

    # ------------------------------------------------------------------ memory
    def _sample(self, key: str, value: int) -> int:
        self._peaks[key] = max(self._peaks[key], value)
        return value

    def memory_allocated(self, device_index: int | None = None) -> int:
        """Bytes held by tensors (``current_allocated_memory``)."""
        return self._sample("allocated", int(self._m.current_allocated_memory()))

    def memory_reserved(self, device_index: int | None = None) -> int:
        """Bytes the Metal driver holds for this process (``driver_allocated_memory``)."""
        return self._sample("reserved", int(self._m.driver_allocated_memory()))

    def max_memory_allocated(self, device_index: int | None = None) -> int:
        """The highest :meth:`memory_allocated` seen since the last reset."""
        self.memory_allocated()
        return self._peaks["allocated"]

    def max_memory_reserved(self, device_index: int | None = None) -> int:
        """The highest :meth:`memory_reserved` seen since the last reset."""
        self.memory_reserved()
        return self._peaks["reserved"]

    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """Restart peak tracking from the current figures."""
        self._peaks = {"allocated": 0, "reserved": 0}
        self.memory_allocated()
        self.memory_reserved()

    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """Current and peak figures in torch.cuda's key style."""
        return {
            "allocated_bytes.all.current": self.memory_allocated(),
            "allocated_bytes.all.peak": self._peaks["allocated"],
            "reserved_bytes.all.current": self.memory_reserved(),
            "reserved_bytes.all.peak": self._peaks["reserved"],
        }

    def total_memory(self, device_index: int | None = None) -> int:
        """The recommended working-set size for the GPU (``recommended_max_memory``)."""
        return int(self._m.recommended_max_memory())

    def available_memory(self, device_index: int | None = None) -> int:
        """Recommended working set minus what the driver already holds for this process."""
        return max(0, self.total_memory() - self.memory_reserved())

    def set_per_process_memory_fraction(self, fraction: float) -> None:
        """Cap this process at ``fraction`` of the recommended working set (0 = no cap, up to 2)."""
        self._m.set_per_process_memory_fraction(fraction)

    # ------------------------------------------------------------------ dtypes
    def is_bf16_supported(self) -> bool:
        """True on macOS 14 and later with a device."""
        return self.is_available() and _macos_major() >= 14

    def is_fp64_supported(self) -> bool:
        """False: Metal has no float64."""
        return False

    # ------------------------------------------------------------------ pinning: unified memory
    def _torch_pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """The tensor itself: host and GPU share memory."""
        return tensor

    def _torch_empty_pinned(self, tensor: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        """An ordinary host buffer."""
        return tensor.new_empty(tuple(shape))

    def _torch_is_pinned(self, tensor: torch.Tensor) -> bool:
        """False: nothing is page-locked on unified memory."""
        return False
