"""The cpu accelerator: torch's CPU tensors, with memory figures from the process.

:class:`CpuAccelerator` is the fallback backend. As in DeepSpeed, a "device" is a local rank, and every device
name is plain ``"cpu"``. Importing this module imports torch; psutil is imported at the first memory figure.
What each member answers, and where it differs from DeepSpeed's ``CPU_Accelerator``: ``docs/backends.md``, "cpu".
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_in_range, check_device_index, check_seed
from accelhal_backends.catalog import CPU as SPEC

if TYPE_CHECKING:
    import psutil

_NODE_DIR = Path("/sys/devices/system/node")
_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"
_RESET_PEAK = b"5"
"""What written to :data:`_CLEAR_REFS` resets the process's peak resident set size to the current one (Linux 4.0)."""


def _first_local_rank() -> tuple[int, str] | None:
    """:func:`accelhal.launch.environment.local_rank`, which replaces this function (imported at first use)."""
    global _local_rank
    from accelhal.launch.environment import local_rank

    _local_rank = local_rank
    return local_rank()


def _first_local_size() -> tuple[int, str] | None:
    """:func:`accelhal.launch.environment.local_size`, which replaces this function (as :func:`_first_local_rank`)."""
    global _local_size
    from accelhal.launch.environment import local_size

    _local_size = local_size
    return local_size()


_local_rank: Callable[[], tuple[int, str] | None] = _first_local_rank
_local_size: Callable[[], tuple[int, str] | None] = _first_local_size


def _kernel_peak() -> int | None:
    """The process's peak resident set size in bytes (``VmHWM`` of :data:`_STATUS`); None where unreported."""
    try:
        fd = os.open(_STATUS, os.O_RDONLY)
    except OSError:
        return None
    try:
        status = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    start = status.find(b"VmHWM:")
    if start < 0:
        return None
    return int(status[start + 6 : status.index(b"kB", start)]) * 1024


def _reset_kernel_peak() -> bool:
    """Reset the kernel's peak to the current resident set size; whether :data:`_CLEAR_REFS` took it."""
    try:
        fd = os.open(_CLEAR_REFS, os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(fd, _RESET_PEAK)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _numa_nodes_with_cpus() -> int:
    """NUMA nodes that own at least one CPU (1 where the kernel does not say)."""
    try:
        nodes = [p for p in _NODE_DIR.glob("node[0-9]*") if (p / "cpulist").read_text().strip()]
    except OSError:
        return 1
    return max(1, len(nodes))


class CpuAccelerator(Accelerator):
    """The host CPU behind the accelhal contract."""

    spec = SPEC
    _is_synchronized_device = True
    _uses_host_timers = True
    _resolves_data_dependency = True
    _handles_memory_backpressure = True
    _torch_pins_host_memory = False

    Stream = None
    """No user streams: CPU work is synchronous (a plain attribute, as cheap to read as ``torch.cpu.Stream``)."""
    Event = None
    """No device events: time with host clocks (``use_host_timers()`` is True)."""

    def __init__(self) -> None:
        super().__init__()
        self._process: psutil.Process | None = None  # created on first use: psutil stays off the selection path
        self._device_index: int | None = None
        self._peak_rss = [0]  # cells, so that the memory calls assign no attribute
        self._kernel_peaks = [True]  # until the kernel's peak cannot be read or reset
        self._numa_nodes: int | None = None

    def _check(self, device_index: object, member: str) -> int:
        """``device_index`` as an int below :meth:`device_count`, else an error naming ``member``."""
        return check_device_in_range(check_device_index(device_index, member), self.device_count(), member)

    # -------------------------------------------------------------- devices
    def device_name(self, device_index: int | None = None) -> str:
        """Always ``"cpu"``: torch's CPU device has no index (an index is still validated)."""
        if device_index is not None:
            self._check(device_index, "device_name")
        return "cpu"

    def device(self, device_index: int | None = None) -> torch.device:
        """``torch.device("cpu")``."""
        if device_index is not None:
            self._check(device_index, "device")
        return torch.device("cpu")

    def current_device_name(self) -> str:
        """``"cpu"``."""
        return "cpu"

    def set_device(self, device_index: int) -> None:
        """Bind this process to local rank ``device_index`` (must be below :meth:`device_count`)."""
        self._device_index = self._check(device_index, "set_device")

    def current_device(self) -> int:
        """The index given to :meth:`set_device`, else the launcher's local rank, else 0.

        A local rank outside ``range(device_count())`` raises, naming the variable that set it.
        """
        if self._device_index is not None:
            return self._device_index
        found = _local_rank()
        if found is None:
            return 0
        rank, variable = found
        count = self.device_count()
        if rank >= count:
            from accelhal.errors import ConfigurationError  # off the path of a valid rank
            from accelhal.launch.known_launchers import LOCAL_SIZE_VARIABLES

            raise ConfigurationError(
                f"{variable}={rank} is not below the cpu backend's device_count() of {count}; a launcher sets "
                f"{variable} below its local world size ({' or '.join(LOCAL_SIZE_VARIABLES[:2])})",
                variable=variable,
                value=str(rank),
            )
        return rank

    def device_count(self) -> int:
        """The launcher's local world size (``LOCAL_SIZE``, ``LOCAL_WORLD_SIZE``, ...), else NUMA nodes with CPUs."""
        found = _local_size()
        if found is not None:
            return found[0]
        if self._numa_nodes is None:
            self._numa_nodes = _numa_nodes_with_cpus()
        return self._numa_nodes

    def synchronize(self, device_index: int | None = None) -> None:
        """Nothing to wait for: CPU work is synchronous (an index is still validated)."""
        if device_index is not None:
            self._check(device_index, "synchronize")

    def is_available(self) -> bool:
        """Always True."""
        return True

    def device_description(self, device_index: int) -> str:
        """The processor's name, as the platform reports it."""
        return platform.processor() or platform.machine() or "cpu"

    # -------------------------------------------------------------- RNG
    def set_rng_state(self, new_state: torch.Tensor, device_index: int | None = None) -> None:
        """Restore torch's CPU generator (one generator for every local rank)."""
        if device_index is not None:
            self._check(device_index, "set_rng_state")
        torch.set_rng_state(new_state)

    def get_rng_state(self, device_index: int | None = None) -> torch.Tensor:
        """The state of torch's CPU generator."""
        if device_index is not None:
            self._check(device_index, "get_rng_state")
        return torch.get_rng_state()

    def manual_seed(self, seed: int) -> None:
        """Seed torch's CPU generator."""
        torch.manual_seed(check_seed(seed, "manual_seed"))

    def manual_seed_all(self, seed: int) -> None:
        """Seed torch's CPU generator (the only one)."""
        torch.manual_seed(check_seed(seed, "manual_seed_all"))

    def initial_seed(self) -> int:
        """The initial seed of torch's CPU generator."""
        return torch.initial_seed()

    def default_generator(self, device_index: int) -> torch.Generator:
        """``torch.default_generator``."""
        self._check(device_index, "default_generator")
        return torch.default_generator

    # -------------------------------------------------------------- memory (the process's resident set)
    def _rss(self) -> int:
        process = self._process
        if process is None or process.pid != os.getpid():  # first use, or a forked child
            import psutil

            process = self._process = psutil.Process()
        return int(process.memory_info().rss)

    def _peak(self) -> int:
        peak = self._peak_rss
        if self._kernel_peaks[0]:
            found = _kernel_peak()
            if found is not None:
                return max(found, peak[0])  # the kernel's count may lag a size just sampled by a few pages
            self._kernel_peaks[0] = False
        peak[0] = max(peak[0], self._rss())
        return peak[0]

    def memory_allocated(self, device_index: int | None = None) -> int:
        """The process's resident set size in bytes."""
        if device_index is not None:
            self._check(device_index, "memory_allocated")
        current = self._rss()
        peak = self._peak_rss
        peak[0] = max(peak[0], current)
        return current

    def max_memory_allocated(self, device_index: int | None = None) -> int:
        """The peak resident set size since the last reset (see :meth:`reset_peak_memory_stats`).

        On Linux the kernel's (``VmHWM`` in ``/proc/self/status``), which counts memory
        allocated and freed between two calls, or a higher size a memory call sampled (the
        kernel's count may lag by a few pages); elsewhere the highest size a memory call sampled.
        """
        return self._peak()

    def memory_reserved(self, device_index: int | None = None) -> int:
        """The process's resident set size (the CPU has no separate allocator reserve)."""
        return self.memory_allocated(device_index)

    def max_memory_reserved(self, device_index: int | None = None) -> int:
        """:meth:`max_memory_allocated` (the CPU has no separate allocator reserve)."""
        return self._peak()

    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """Restart the peak from the current resident set size, for the whole process.

        On Linux writes ``5`` to ``/proc/self/clear_refs``, which resets the kernel's peak
        (``VmHWM``). Where that file cannot be written (not Linux, or a sandbox), the peaks
        from then on are the highest size sampled by the memory calls, starting with this one:
        memory allocated and freed between two calls is not seen.
        """
        if self._kernel_peaks[0] and not _reset_kernel_peak():
            self._kernel_peaks[0] = False
        self._peak_rss[0] = self._rss()

    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """Current and peak resident set size, in torch.cuda's key style (the peak as :meth:`max_memory_allocated`)."""
        current = self.memory_allocated(device_index)
        peak = self._peak()
        return {
            "allocated_bytes.all.current": current,
            "allocated_bytes.all.peak": peak,
            "reserved_bytes.all.current": current,
            "reserved_bytes.all.peak": peak,
        }

    def total_memory(self, device_index: int | None = None) -> int:
        """Physical memory of the host in bytes (an index is still validated)."""
        import psutil

        if device_index is not None:
            self._check(device_index, "total_memory")
        return int(psutil.virtual_memory().total)

    def available_memory(self, device_index: int | None = None) -> int:
        """Memory available to new allocations on the host, in bytes (an index is still validated)."""
        import psutil

        if device_index is not None:
            self._check(device_index, "available_memory")
        return int(psutil.virtual_memory().available)

    # -------------------------------------------------------------- dtypes
    def is_bf16_supported(self) -> bool:
        """True: torch implements bfloat16 on every CPU."""
        return True

    def is_fp16_supported(self) -> bool:
        """True when oneDNN has native float16 kernels on this CPU (as DeepSpeed decides)."""
        try:
            return bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
        except (AttributeError, RuntimeError):
            return False

    # -------------------------------------------------------------- pinning: nothing to page-lock for
    def pin_memory(self, tensor: torch.Tensor, make_copy: bool = True, match_shape: bool = True) -> torch.Tensor:
        """``tensor`` itself, whatever ``make_copy`` and ``match_shape`` are: nothing to page-lock for.

        DeepSpeed's own ``CPU_Accelerator`` (0.19.8) answers so; a program moving from it gets the same objects.
        """
        if isinstance(tensor, torch.Tensor):
            return tensor
        return super().pin_memory(tensor, make_copy, match_shape)  # refuses a non-tensor, naming the member

    def _torch_pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """The tensor itself: there is no device to page-lock host memory for."""
        return tensor

    def _torch_empty_pinned(self, tensor: torch.Tensor, shape: Any) -> torch.Tensor:
        """An ordinary host buffer."""
        return tensor.new_empty(tuple(shape))

    def _torch_is_pinned(self, tensor: torch.Tensor) -> bool:
        """False: nothing is page-locked by the cpu backend."""
        return False
