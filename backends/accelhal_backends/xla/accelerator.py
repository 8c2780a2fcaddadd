"""The xla accelerator: torch_xla's lazy tensors on one PJRT client (XLA's CPU client, a TPU, a plugin).

Public here: :class:`XlaAccelerator`. Importing this module imports torch, not torch_xla; constructing the
accelerator imports torch_xla, and neither that, ``is_available()`` nor the identity members start torch_xla's
runtime (the PJRT client); the device members do, as torch_xla's own calls do. Streams, events, graphs, pinning
and ``default_generator()`` are absent, by the contract's conventions. How each member maps onto torch_xla:
``docs/backends.md``, "xla".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.arguments import check_device_in_range, check_device_index, check_seed, check_tensor
from accelhal.contract.spec import Capability
from accelhal.errors import BackendUnavailableError, UnsupportedFeatureError
from accelhal_backends.catalog import XLA as SPEC
from accelhal_backends.cpu.accelerator import CpuAccelerator
from accelhal_backends.xla import detection

TORCH_XLA_DEFAULT_SEED = 101
"""The seed torch_xla gives every device until one is set (``xm.get_rng_state()`` in a fresh process)."""
SEED_RANGE = range(-(1 << 63), 1 << 64)
"""The seeds torch accepts; a negative one is taken modulo 2**64, as torch does."""
STATE_BYTES = 8
"""An XLA RNG state: one unsigned 64-bit seed."""


class _HostMemory:
    """The figures of XLA's CPU client: its buffers are host memory, so the cpu backend's (the resident set)."""

    def __init__(self) -> None:
        self._cpu = CpuAccelerator()

    def used(self, device: str) -> int:
        """The process's resident set size."""
        return self._cpu.memory_allocated()

    def peak(self, device: str) -> int:
        """The highest resident set size seen since the last reset."""
        return self._cpu.max_memory_allocated()

    def reset(self, device: str) -> None:
        """Restart the peak from the current resident set size."""
        self._cpu.reset_peak_memory_stats()

    def total(self, device: str) -> int:
        """The host's physical memory."""
        return self._cpu.total_memory()

    def available(self, device: str) -> int:
        """The host's memory available to new allocations."""
        return self._cpu.available_memory()


class _ClientMemory:
    """The figures of a device client (a TPU), from ``xm.get_memory_info``; peaks sampled after a reset."""

    def __init__(self, xm: Any, backend: str, client: str) -> None:
        self._xm, self._backend, self._client = xm, backend, client
        self._peaks: dict[str, int] = {}  # device -> highest bytes_used since its last reset (absent: never reset)

    def _info(self, device: str) -> dict[str, int]:
        try:
            info = self._xm.get_memory_info(torch.device(device))
        except RuntimeError as exc:
            raise UnsupportedFeatureError(
                self._backend, "memory figures", f"the {self._client} PJRT client keeps no allocator statistics ({exc})"
            ) from exc
        used = int(info["bytes_used"])
        if device in self._peaks:
            self._peaks[device] = max(self._peaks[device], used)
        return {"used": used, "peak": int(info.get("peak_bytes_used", used)), "limit": int(info["bytes_limit"])}

    def used(self, device: str) -> int:
        """``bytes_used``."""
        return self._info(device)["used"]

    def peak(self, device: str) -> int:
        """The runtime's ``peak_bytes_used`` until the first reset, then the highest ``bytes_used`` sampled since."""
        info = self._info(device)
        return self._peaks.get(device, max(info["peak"], info["used"]))

    def reset(self, device: str) -> None:
        """Restart the peak from the current ``bytes_used``."""
        self._peaks[device] = self._info(device)["used"]

    def total(self, device: str) -> int:
        """``bytes_limit``."""
        return self._info(device)["limit"]

    def available(self, device: str) -> int:
        """``bytes_limit - bytes_used``."""
        info = self._info(device)
        return max(0, info["limit"] - info["used"])


class XlaAccelerator(Accelerator):
    """XLA devices through torch_xla (see the module docstring)."""

    spec = SPEC
    _uses_host_timers = True  # no device events to time with
    _resolves_data_dependency = True  # no user streams: XLA orders the work of the compiled graph
    _torch_pins_host_memory = False

    def __init__(self) -> None:
        """Import torch_xla (raising :class:`~accelhal.BackendUnavailableError` if it cannot load); starts nothing."""
        super().__init__()
        try:
            import torch_xla
            import torch_xla.core.xla_model as xm
            import torch_xla.runtime as xr
        except Exception as exc:  # not installed, or built for another torch
            raise BackendUnavailableError(
                self._name, f"cannot import torch_xla: {type(exc).__name__}: {exc}", hint=SPEC.hint
            ) from exc
        self._xla: Any = torch_xla
        self._xm: Any = xm
        self._client = str(xr.device_type())  # CPU, TPU or a plugin's name: PJRT_DEVICE as torch_xla reads it
        self._memory: _HostMemory | _ClientMemory
        if self._client == "CPU":
            self._memory = _HostMemory()
        else:
            self._memory = _ClientMemory(xm, self._name, self._client)
            self.capabilities = frozenset({Capability.DEVICE_MEMORY_STATS})
        self._seeds: dict[int, int] = {}
        self._dtypes: dict[tuple[int, torch.dtype], bool] = {}

    def vendor_versions(self) -> dict[str, str]:
        """torch_xla's version and the PJRT client (``{"torch_xla": "2.9.0", "pjrt": "CPU"}``)."""
        return {"torch_xla": str(self._xla.__version__), "pjrt": self._client}

    # ------------------------------------------------------------------ devices
    def _in_range(self, device_index: object, member: str) -> int:
        return check_device_in_range(check_device_index(device_index, member), self.device_count(), member)

    def _index(self, device_index: int | None, member: str) -> int:
        return self.current_device() if device_index is None else self._in_range(device_index, member)

    def is_available(self) -> bool:
        """Whether a PJRT client is chosen and has devices, read as the probe reads it; starts no runtime."""
        return detection.find_device().is_available

    def device_count(self) -> int:
        """``torch_xla.device_count()``: the devices this process addresses (starts the runtime)."""
        return int(self._xla.device_count())

    def current_device(self) -> int:
        """The index of torch_xla's default device (``torch_xla.device()``)."""
        return int(self._xla.device().index)

    def set_device(self, device_index: int) -> None:
        """Make ``xla:<device_index>`` torch_xla's default device (``torch_xla.device(i)``)."""
        self._xla.device(self._in_range(device_index, "set_device"))

    def device_description(self, device_index: int) -> str:
        """The runtime's device and its kind: ``"CPU:0 (cpu)"``, ``"TPU:0 (TPU v4)"``."""
        index = self._in_range(device_index, "device_description")
        return f"{self._xla.real_devices()[index]} ({self._xm.xla_device_kind(f'xla:{index}')})"

    @contextlib.contextmanager
    def _default_device(self, index: int) -> Iterator[None]:
        """Make ``xla:<index>`` the default device for the body (torch_xla syncs its default device)."""
        previous = self.current_device()
        if previous == index:
            yield
            return
        self._xla.device(index)
        try:
            yield
        finally:
            self._xla.device(previous)

    def synchronize(self, device_index: int | None = None) -> None:
        """Run the device's pending graph and wait (``torch_xla.sync(wait=True)``), then every queued execution."""
        with self._default_device(self._index(device_index, "synchronize")):
            self._xla.sync(wait=True)
        self._xm.wait_device_ops()

    # ------------------------------------------------------------------ RNG: one 64-bit seed per device
    def _device_name(self, device_index: int | None, member: str) -> str:
        return f"xla:{self._index(device_index, member)}"

    def get_rng_state(self, device_index: int | None = None) -> torch.Tensor:
        """The device's running seed as 8 little-endian bytes (``torch.uint8``)."""
        seed = int(self._xm.get_rng_state(self._device_name(device_index, "get_rng_state")))
        return torch.tensor(list(seed.to_bytes(STATE_BYTES, "little")), dtype=torch.uint8)

    def set_rng_state(self, new_state: torch.Tensor, device_index: int | None = None) -> None:
        """Restore a state from :meth:`get_rng_state` (8 ``torch.uint8`` bytes)."""
        state = check_tensor(new_state, "set_rng_state")
        if state.dtype != torch.uint8 or state.numel() != STATE_BYTES:
            raise ValueError(
                f"set_rng_state: an xla RNG state is {STATE_BYTES} torch.uint8 bytes (a 64-bit seed, as "
                f"get_rng_state() returns), got {state.numel()} element(s) of {state.dtype}"
            )
        seed = int.from_bytes(bytes(state.cpu().tolist()), "little")
        self._xm.set_rng_state(seed, self._device_name(device_index, "set_rng_state"))

    def _seed(self, seed: object, member: str, indices: Sequence[int]) -> None:
        value = check_seed(seed, member)
        if value not in SEED_RANGE:
            raise ValueError(f"{member}: a seed must lie in [-2**63, 2**64), got {value}")
        value %= 1 << 64
        for index in indices:
            self._xm.set_rng_state(value, f"xla:{index}")
            self._seeds[index] = value

    def manual_seed(self, seed: int) -> None:
        """Seed the current device (torch's ``manual_seed`` leaves XLA's seeds alone)."""
        self._seed(seed, "manual_seed", [self.current_device()])

    def manual_seed_all(self, seed: int) -> None:
        """Seed every device of this process."""
        self._seed(seed, "manual_seed_all", range(self.device_count()))

    def initial_seed(self) -> int:
        """The seed last given to :meth:`manual_seed`/:meth:`manual_seed_all` for the current device (else 101).

        torch_xla keeps only the running seed, so a seed set through torch_xla itself is not seen here.
        """
        return self._seeds.get(self.current_device(), TORCH_XLA_DEFAULT_SEED)

    def default_generator(self, device_index: int) -> torch.Generator:
        """Unsupported: XLA's random state is a seed per device, not a ``torch.Generator``."""
        self._in_range(device_index, "default_generator")
        raise UnsupportedFeatureError(
            self._name,
            "default_generator()",
            "torch_xla keeps each device's random state as a 64-bit seed (get_rng_state()/set_rng_state()), "
            "and torch.Generator(device='xla') raises 'XLA device type not an accelerator'",
        )

    # ------------------------------------------------------------------ memory
    def memory_allocated(self, device_index: int | None = None) -> int:
        """Bytes in use on the device (``bytes_used``); the process's resident set on the CPU client."""
        return self._memory.used(self._device_name(device_index, "memory_allocated"))

    def max_memory_allocated(self, device_index: int | None = None) -> int:
        """The peak of :meth:`memory_allocated` since the last reset (the runtime's ``peak_bytes_used`` before one)."""
        return self._memory.peak(self._device_name(device_index, "max_memory_allocated"))

    def memory_reserved(self, device_index: int | None = None) -> int:
        """:meth:`memory_allocated`: PJRT reports no reserve apart from what is in use."""
        return self.memory_allocated(device_index)

    def max_memory_reserved(self, device_index: int | None = None) -> int:
        """:meth:`max_memory_allocated`."""
        return self.max_memory_allocated(device_index)

    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """Restart the peaks from the current figures."""
        self._memory.reset(self._device_name(device_index, "reset_peak_memory_stats"))

    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """Current and peak figures in torch.cuda's key style (reserved equals allocated)."""
        figures = {"current": self.memory_allocated(device_index), "peak": self.max_memory_allocated(device_index)}
        kinds = ("allocated", "reserved")
        return {f"{kind}_bytes.all.{name}": value for kind in kinds for name, value in figures.items()}

    def total_memory(self, device_index: int | None = None) -> int:
        """The device's ``bytes_limit``; the host's physical memory on the CPU client."""
        return self._memory.total(self._device_name(device_index, "total_memory"))

    def available_memory(self, device_index: int | None = None) -> int:
        """``bytes_limit - bytes_used``; the host's available memory on the CPU client."""
        return self._memory.available(self._device_name(device_index, "available_memory"))

    # ------------------------------------------------------------------ dtypes: tried on the device
    def _holds(self, dtype: torch.dtype) -> bool:
        """Whether ``x + x`` of ``dtype`` computes on the current device and reads back right (tried once)."""
        if not self.is_available():
            return False
        key = (self.current_device(), dtype)
        if key not in self._dtypes:
            try:
                values = torch.tensor([1.0, 2.0], dtype=dtype, device=self.device())
                self._dtypes[key] = torch.equal((values + values).cpu().float(), torch.tensor([2.0, 4.0]))
            except Exception:  # a client without the dtype fails in its own way
                self._dtypes[key] = False
        return self._dtypes[key]

    def is_bf16_supported(self) -> bool:
        """Whether bfloat16 computes on the device."""
        return self._holds(torch.bfloat16)

    def is_fp16_supported(self) -> bool:
        """Whether float16 computes on the device."""
        return self._holds(torch.float16)

    def is_fp64_supported(self) -> bool:
        """Whether float64 computes on the device."""
        return self._holds(torch.float64)

    # ------------------------------------------------------------------ pinning: nothing to page-lock for
    # torch_xla has no pinned host memory (transfers go through the PJRT client): host buffers, as on cpu
    _torch_pin_memory = CpuAccelerator._torch_pin_memory
    _torch_empty_pinned = CpuAccelerator._torch_empty_pinned
    _torch_is_pinned = CpuAccelerator._torch_is_pinned
