"""The generic backend: the accelerator torch itself reports, when no named backend claims its device type.

Registers a backend under that device type's own name, below every named backend and above cpu; its members are
:mod:`accelhal_backends.generic.accelerator`'s. Importing this module imports nothing; the registration imports
torch (once per process, through :mod:`accelhal.process.torch_import`) only where an out-of-tree device can be
there: torch already loaded, or a ``torch.backends`` entry point installed for torch's device autoload. See
``docs/backends.md``, "The generic backend".
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable

from accelhal.contract.probes import GENERIC_OLDEST_TORCH, torch_accelerator_type
from accelhal.contract.spec import BackendSpec, Verdict
from accelhal.discovery.entry_points import find as find_entry_points
from accelhal.discovery.hooks import hookimpl
from accelhal.process import torch_import

PRIORITY = 150
"""Below every named built-in backend (the lowest is xla, 200) and above cpu (100)."""

TORCH_ACCELERATOR_CALLS = (
    "current_device_index",
    "set_device_index",
    "device_count",
    "synchronize",
    "current_stream",
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_stats",
    "reset_peak_memory_stats",
    "get_memory_info",
    "get_device_capability",
)
"""The ``torch.accelerator`` functions the generic accelerator calls. ``torch.accelerator`` arrived in
torch 2.6 (devices and streams), its memory figures in 2.9, ``get_memory_info`` and
``get_device_capability`` in 2.10; on an older torch the generic backend is ``broken``, naming what is
missing, rather than an accelerator whose memory members fail."""


DEVICE_MODULE_RNG = (
    "manual_seed",
    "manual_seed_all",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "default_generators",
)
"""What the generic accelerator's RNG members take from the device module (``torch.get_device_module(<type>)``);
where one is missing, its member raises :class:`~accelhal.UnsupportedFeatureError` naming it."""

DEVICE_MODULE_OPTIONAL = ("_lazy_init", "get_device_name", "is_bf16_supported", "_lazy_call")
"""What the generic accelerator uses where the device module has it; each absence has an answer of its own
(``docs/backends.md``, "What a device must provide")."""


def comm_backend(device_type: str) -> str:
    """The ``torch.distributed`` backend registered for ``device_type``, or ``""`` when none is."""
    import torch.distributed as dist

    if not dist.is_available():
        return ""
    return str(dist.Backend.default_device_backend_map.get(device_type, ""))


def probe(device_type: str) -> Verdict:
    """Available when torch still reports ``device_type``, has what the generic accelerator calls, and counts a device.

    Counting goes through ``torch.accelerator.device_count()``, which must not create a
    device context (torch requires it of every accelerator).
    """
    import torch

    current = torch_accelerator_type()
    if current != device_type:
        return Verdict.no_device(f"torch's accelerator is now {current!r}, not {device_type!r}")
    missing = [name for name in TORCH_ACCELERATOR_CALLS if not hasattr(torch.accelerator, name)]
    if missing:
        return Verdict.broken(
            f"torch {torch.__version__}'s torch.accelerator has no {', '.join(missing)}, which the generic backend "
            f"calls (torch >= {GENERIC_OLDEST_TORCH} has them)",
            hint=f"upgrade torch to {GENERIC_OLDEST_TORCH} or later, or install the accelhal backend of the "
            f"{device_type!r} device's vendor",
        )
    try:
        count = int(torch.accelerator.device_count())
    except Exception as exc:  # a vendor's device module can fail in any way
        return Verdict.broken(
            f"torch.accelerator.device_count() failed: {type(exc).__name__}: {exc}",
            hint=f"the {device_type} driver or runtime failed to enumerate its devices: check the vendor's driver "
            "and run the vendor's own device-listing tool",
        )
    if count <= 0:
        return Verdict.no_device(
            f"torch reports the accelerator {device_type!r} but torch.accelerator.device_count() is 0",
            hint=f"check the {device_type} driver and the variables that hide its devices",
        )
    return Verdict.available(
        f"{count} device(s) of torch's accelerator {device_type!r}, which no named backend claims "
        f"(served through torch.accelerator)"
    )


def spec_for(device_type: str) -> BackendSpec:
    """The generic backend's registration for ``device_type``."""
    comm = comm_backend(device_type)
    return BackendSpec(
        name=device_type,
        device_type=device_type,
        priority=PRIORITY,
        accelerator=f"accelhal_backends.generic.accelerator:classes.{device_type}",
        probe=functools.partial(probe, device_type),
        requires=("torch",),
        comm_backend=comm,
        generic=True,
        description=f"torch's accelerator {device_type!r} through torch.accelerator (generic); "
        + (f"{comm} collectives" if comm else "no torch.distributed backend registered for it"),
    )


def _torch_may_report_a_device() -> bool:
    """Whether asking torch is worth importing it during discovery.

    Out-of-tree devices reach torch through ``torch.backends`` entry points (torch's device
    autoload) or through a vendor package the program imported itself (torch is then loaded
    already). Without either, torch's accelerator is an in-tree type that a named backend
    claims (cuda, xpu, mps, hpu), and discovery stays free of torch.
    """
    if "torch" in sys.modules:
        return True
    autoload = os.environ.get(torch_import.AUTOLOAD_VARIABLE, "1").strip().lower() not in ("0", "false", "no", "off")
    return autoload and bool(find_entry_points("torch.backends"))


@hookimpl
def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the generic backend for torch's accelerator, if torch reports one (cpu is not one).

    torch is imported through :func:`accelhal.process.torch_import.attempt`, once per process: a torch
    that cannot load registers nothing here, and every backend that requires torch says why.
    """
    if importlib.util.find_spec("torch") is None or not _torch_may_report_a_device():
        return
    if not torch_import.attempt().loaded:
        return
    device_type = torch_accelerator_type()
    if device_type is not None and device_type != "cpu":
        register(spec_for(device_type))
