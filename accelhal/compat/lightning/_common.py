"""The accelerator's behaviour, shared by the ``lightning.pytorch`` and ``pytorch_lightning`` classes.

Every answer comes from the active accelhal accelerator; no vendor is named here. Lightning
calls ``parse_devices``, ``get_parallel_devices``, ``auto_device_count`` and ``is_available``
on the class, so they read the active backend rather than the instance.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

import accelhal
from accelhal.compat._placement import is_host
from accelhal.contract.accelerator import Accelerator
from accelhal.errors import AccelhalError, ConfigurationError, UnsupportedFeatureError

logger = logging.getLogger("accelhal")

_STAT_MEMBERS = {
    "allocated_bytes.all.current": "memory_allocated",
    "allocated_bytes.all.peak": "max_memory_allocated",
    "reserved_bytes.all.current": "memory_reserved",
    "reserved_bytes.all.peak": "max_memory_reserved",
    "total_bytes": "total_memory",
    "available_bytes": "available_memory",
}
"""The keys ``get_device_stats`` adds to ``memory_stats()``, each from the contract member named."""

_MIXED_DTYPES = {"bf16-mixed": "is_bf16_supported", "16-mixed": "is_fp16_supported"}
_GPU_CLASSES: dict[tuple[type[Any], str], type[Any]] = {}
"""Each accelerator class with one device type's Lightning GPU class mixed in, made on first use."""


def _contract() -> Accelerator:
    return accelhal.get_accelerator()


def _device_list(devices: object) -> list[int] | int:
    """Lightning's ``devices`` forms as a list of indices, or a count (``-1``: all)."""
    if isinstance(devices, str):
        text = devices.strip()
        if "," in text:
            parts = [part.strip() for part in text.split(",") if part.strip()]
            if all(part.isdecimal() for part in parts) and parts:
                return [int(part) for part in parts]
        elif text == "-1" or text.isdecimal():
            return int(text)
    elif isinstance(devices, int) and not isinstance(devices, bool):
        return devices
    elif isinstance(devices, Sequence) and all(isinstance(i, int) and not isinstance(i, bool) for i in devices):
        return list(devices)
    raise ConfigurationError(
        f"devices must be a positive count, -1 (all), a list of device indices or a string of either "
        f'("2", "0,1"), got {devices!r}',
        variable="devices",
        value=devices,
    )


def parse_devices(devices: object) -> list[int]:
    """The device indices that ``devices`` selects on the active backend, checked against its devices."""
    acc = _contract()
    wanted = _device_list(devices)
    count = acc.device_count()
    if isinstance(wanted, int):
        if wanted == -1:
            return list(range(count if count > 0 else 1))
        if wanted < 1:
            raise ConfigurationError(
                f"devices must be a positive count, -1 (all) or a list of device indices, got {devices!r}",
                variable="devices",
                value=devices,
            )
        wanted = list(range(wanted))
    if not wanted or len(set(wanted)) != len(wanted) or min(wanted) < 0:
        raise ConfigurationError(
            f"devices must list distinct non-negative device indices, got {devices!r}",
            variable="devices",
            value=devices,
        )
    if not is_host(acc) and max(wanted) >= count:
        raise ConfigurationError(
            f"devices={devices!r} asks for device index {max(wanted)}, but the {acc.name} backend sees "
            f"{count} device(s) (indices 0 to {count - 1})",
            variable="devices",
            value=devices,
        )
    return wanted


def get_parallel_devices(devices: Sequence[int]) -> list[torch.device]:
    """The ``torch.device`` of each index (all ``cpu`` on the host backend: one process each)."""
    acc = _contract()
    if is_host(acc):  # one unindexed device that any number of processes share
        return [acc.device() for _ in devices]
    return [acc.device(index) for index in devices]


def auto_device_count() -> int:
    """The backend's device count; 1 on the host, as Lightning's cpu accelerator does."""
    acc = _contract()
    return 1 if is_host(acc) else max(acc.device_count(), 1)


def is_available() -> bool:
    """Whether the active backend has a usable device; False when selection fails (never raises)."""
    try:
        return _contract().is_available()
    except AccelhalError:
        return False


def _index_of(device: torch.device | str | int) -> int | None:
    if isinstance(device, int):
        return device
    return torch.device(device).index


def _active_name() -> str:
    return _contract().name


class AccelhalLightningAccelerator:
    """The methods of the Lightning ``Accelerator`` over accelhal; mixed into each package's base class."""

    _package: ClassVar[str]
    """The Lightning package whose classes the subclass derives from."""
    _plain: ClassVar[type[Any]]
    """The class without a Lightning GPU class mixed in (what pickling names)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_plain" not in vars(cls):
            cls._plain = cls

    def __new__(cls, backend: str | Accelerator | None = None) -> Any:
        """An instance of ``cls``, or, on a backend whose device type Lightning has a GPU class for, of both.

        Lightning's own code asks ``isinstance(accelerator, CUDAAccelerator)`` (or
        ``MPSAccelerator``) where it decides what a GPU run needs: its "GPU available: ...,
        used" line, the root device of a single-device run, FSDP and DeepSpeed. On a cuda or
        mps backend the accelerator is therefore also an instance of that class (its
        ``__class__`` derives from ``cls`` and the Lightning class; every member still comes
        from ``cls``), so Lightning treats the run as the GPU run it is. Which classes count
        is the installed release's shape (:data:`~accelhal.compat.lightning._releases.SHAPES`).
        """
        from accelhal.compat.lightning._releases import checked_shape

        gpu_used = checked_shape(cls._package).gpu_used
        try:
            device_type = (_contract() if backend is None else accelhal.set_accelerator(backend)).device_type
        except AccelhalError:  # selection failed: is_available() says so when Lightning asks
            device_type = ""
        chosen = cls
        if device_type in gpu_used:
            key = (cls, device_type)
            if key not in _GPU_CLASSES:
                lightning_gpu = getattr(importlib.import_module(f"{cls._package}.accelerators"), gpu_used[device_type])
                _GPU_CLASSES[key] = type(f"Accelhal{lightning_gpu.__name__}", (cls, lightning_gpu), {"_plain": cls})
            chosen = _GPU_CLASSES[key]
        return super().__new__(chosen)

    def __init__(self, backend: str | Accelerator | None = None) -> None:
        """Follow the active accelhal backend, or make ``backend`` (a name or an instance) active first.

        A named backend becomes :func:`accelhal.get_accelerator`'s answer too, so the
        model's code and Lightning see one device.
        """
        super().__init__()
        self._backend = None if backend is None else _active_name()  # __new__ made it active

    def __reduce__(self) -> tuple[type[Any], tuple[str]]:
        # Spawned DDP workers unpickle the Trainer: they make the parent's backend active too.
        return self._plain, (self._backend or _active_name(),)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._backend!r})" if self._backend else f"{type(self).__name__}()"

    @property
    def backend(self) -> Accelerator:
        """The accelhal accelerator every answer comes from (the active one)."""
        return _contract()

    # ------------------------------------------------------------ Lightning's accelerator members
    parse_devices = staticmethod(parse_devices)
    get_parallel_devices = staticmethod(get_parallel_devices)
    auto_device_count = staticmethod(auto_device_count)
    is_available = staticmethod(is_available)

    @staticmethod
    def name() -> str:
        """``"accelhal"``: the name in Lightning's registry."""
        return "accelhal"

    @classmethod
    def register_accelerators(cls, accelerator_registry: Any) -> None:
        """Enter this class into ``accelerator_registry`` as ``"accelhal"``."""
        accelerator_registry.register(cls.name(), cls, description="any accelhal backend (accelhal.get_accelerator())")

    def setup_device(self, device: torch.device) -> None:
        """Make ``device`` current (``set_device``) when it is one of the backend's indexed devices.

        Lightning hands a custom accelerator's single-device run ``cpu`` first; :meth:`setup`
        then moves it to the backend's device.
        """
        acc = _contract()
        if device.type == acc.device_type and device.index is not None:
            acc.set_device(device.index)

    def setup(self, trainer: Any) -> None:
        """Put the run on the backend: its device, its autocast device, its communication backend.

        Lightning only knows its own accelerators' devices: for any other it places a
        single-device run on ``cpu`` and autocasts mixed precision on ``cuda``. Here, before
        the model moves, the single-device strategy's device becomes the backend's and the
        mixed-precision plugin autocasts on the backend's device type (after checking that
        the backend supports the dtype and torch offers autocast there). A distributed strategy whose process group uses
        another backend than :meth:`~accelhal.Accelerator.communication_backend_name` is
        refused (pass :func:`~accelhal.compat.lightning.ddp_strategy`).
        """
        acc = _contract()
        self._place_run(trainer, acc)
        self._match_precision(trainer, acc)
        self._check_process_group(trainer, acc)
        self._log_device(trainer, acc)

    def teardown(self) -> None:
        """Release the backend's cached memory (``empty_cache``)."""
        _contract().empty_cache()

    def get_device_stats(self, device: torch.device | str | int) -> dict[str, Any]:
        """``memory_stats()`` of ``device`` with the contract's memory figures, in bytes.

        Adds ``allocated_bytes.all.current``/``.peak``, ``reserved_bytes.all.current``/``.peak``,
        ``total_bytes`` and ``available_bytes``; a figure the backend cannot give is left out.
        """
        acc = _contract()
        index = _index_of(device)
        stats = dict(acc.memory_stats(index))
        for key, member in _STAT_MEMBERS.items():
            try:
                stats[key] = getattr(acc, member)(index)
            except UnsupportedFeatureError:
                continue
        return stats

    # ------------------------------------------------------------ setup's parts
    def _lightning(self, module: str) -> Any:
        return importlib.import_module(f"{self._package}.{module}")

    def _place_run(self, trainer: Any, acc: Accelerator) -> None:
        strategy = trainer.strategy
        root = strategy.root_device
        if root.type == acc.device_type:
            return
        if type(strategy) is not self._lightning("strategies").SingleDeviceStrategy:
            raise ConfigurationError(
                f"{type(strategy).__name__} runs on {root}, not on the {acc.name} backend's {acc.device_type} "
                "devices; let Lightning's strategy take its devices from accelerator='accelhal'",
                variable="strategy",
                value=strategy,
            )
        # The connector's parsed devices (``devices=[3]``); SingleDeviceStrategy keeps only ``cpu``.
        parsed = getattr(getattr(trainer, "_accelerator_connector", None), "_parallel_devices", None) or []
        target = parsed[0] if parsed and getattr(parsed[0], "type", None) == acc.device_type else None
        if target is None:
            target = acc.device(acc.current_device())
        logger.info("accelhal: Lightning's single-device run moves from %s to %s", root, target)
        strategy._root_device = target
        self.setup_device(target)

    def _match_precision(self, trainer: Any, acc: Accelerator) -> None:
        plugin = trainer.precision_plugin
        if not isinstance(plugin, self._lightning("plugins.precision").MixedPrecision):
            return
        supported = _MIXED_DTYPES.get(plugin.precision)
        if supported is not None and not getattr(acc, supported)():
            raise ConfigurationError(
                f"precision={plugin.precision!r} needs a dtype the {acc.name} backend does not support "
                f"({supported}() is False); choose another precision",
                variable="precision",
                value=plugin.precision,
            )
        if not torch.amp.is_autocast_available(acc.device_type):
            raise ConfigurationError(
                f"precision={plugin.precision!r} autocasts, and torch offers no autocast on "
                f"{acc.device_type!r} (the {acc.name} backend's device type); choose a '-true' precision",
                variable="precision",
                value=plugin.precision,
            )
        if plugin.device != acc.device_type:
            plugin.device = acc.device_type
            if plugin.scaler is not None:
                plugin.scaler = torch.amp.GradScaler(device=acc.device_type)

    def _log_device(self, trainer: Any, acc: Accelerator) -> None:
        """Say, in Lightning's log, the device the run uses and its backend, beside Lightning's own line.

        Lightning's line before it (``GPU available: False, used: False``) counts only its GPU classes
        (CUDA and MPS), and is true; a second ``used: True`` read as a contradiction. So the line says where
        the run is, and, on a device Lightning does not count, that its line does not count it.
        """
        from accelhal.compat.lightning._releases import checked_shape

        gpu_used = checked_shape(self._package).gpu_used
        where = f"accelhal: running on {trainer.strategy.root_device} (accelhal backend {acc.name!r})"
        if acc.device_type in gpu_used:
            said = f"{where}, the GPU Lightning's line above counts"
        else:
            counted = " and ".join(sorted(device_type.upper() for device_type in gpu_used))
            said = f'{where}; Lightning\'s "GPU available" line above counts only {counted} devices'
        self._lightning("utilities").rank_zero_info(said)

    def _check_process_group(self, trainer: Any, acc: Accelerator) -> None:
        used = getattr(trainer.strategy, "process_group_backend", None)
        wanted = acc.communication_backend_name()
        if used is not None and used != wanted:
            raise ConfigurationError(
                f"the process group uses {used!r}, but the {acc.name} backend communicates through {wanted!r}; "
                "pass strategy=accelhal.compat.lightning.ddp_strategy()",
                variable="strategy",
                value=used,
            )
