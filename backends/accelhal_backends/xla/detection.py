"""Which XLA device a process would get, read without starting torch_xla's runtime.

:func:`probe` reads ``PJRT_DEVICE`` (unset: looks for a TPU as torch_xla does), checks the client's name and
counts its devices without importing anything, and only then imports torch_xla; it never takes torch_xla's
fallback to its CPU client for a device. The runtime (the PJRT client) is never started, so a forked child or
an ``xmp.spawn`` worker can still open a TPU. Importing this module imports neither torch nor torch_xla;
importing torch_xla costs seconds and has torch_xla's own side effects. See ``docs/backends.md``, "xla".
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

from accelhal.contract.verdict import Verdict
from accelhal.discovery.entry_points import find as find_entry_points
from accelhal_backends.catalog import XLA_INSTALL_HINT as INSTALL_HINT

PJRT_DEVICE = "PJRT_DEVICE"
"""torch_xla's variable naming the PJRT client (the device type) of the process."""
TPU_LIBRARY_PATH = "TPU_LIBRARY_PATH"
"""Where libtpu is, when not in the ``libtpu`` package (torch_xla's own variable)."""
CPU_NUM_DEVICES = "CPU_NUM_DEVICES"
"""How many devices XLA's CPU client shows (default 1)."""
PLUGIN_GROUP = "torch_xla.plugins"
"""The entry-point group through which torch_xla registers PJRT plugins (by upper-cased name)."""
BUILT_IN_CLIENTS = ("CPU", "TPU")
"""The PJRT clients torch_xla 2.9 provides itself (its CUDA client became a separate plugin)."""

PCI_DEVICES = Path("/sys/bus/pci/devices")
GOOGLE_PCI_VENDOR = "0x1ae0"
TPU_PCI_DEVICES = frozenset({"0x0027", "0x005e", "0x0063", "0x006f", "0x0076", "0x0056", "0x0062"})
"""TPU v2/v3, v4, v5e, v6e, 7x and two test parts: the device ids torch_xla 2.9 counts as TPU chips."""

DEFAULT_HINT = "set PJRT_DEVICE=CPU to run on XLA's CPU client, or PJRT_DEVICE=TPU on a TPU host"
TPU_HINT = "install libtpu for torch_xla (pip install 'torch_xla[tpu]')"


def tpu_chips(devices: Path = PCI_DEVICES) -> int:
    """The TPU chips attached through PCI, counted as torch_xla counts them (no runtime, no import)."""
    chips = 0
    for vendor in devices.glob("*/vendor"):
        try:
            if vendor.read_text().strip() != GOOGLE_PCI_VENDOR:
                continue
            if (vendor.parent / "device").read_text().strip() in TPU_PCI_DEVICES:
                chips += 1
        except OSError:  # a device removed while looking
            continue
    return chips


def libtpu_found() -> bool:
    """Whether torch_xla would find libtpu: ``TPU_LIBRARY_PATH``, its bundled copy, or the ``libtpu`` package."""
    if os.environ.get(TPU_LIBRARY_PATH):
        return True
    spec = importlib.util.find_spec("torch_xla")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if any((Path(location) / "lib" / "libtpu.so").is_file() for location in locations):
        return True
    return importlib.util.find_spec("libtpu") is not None


def plugin_clients() -> dict[str, str]:
    """The PJRT plugins installed for torch_xla: ``{"NEURON": "torch_xla._internal.neuron:NeuronPlugin", ...}``."""
    return {point.name.upper(): point.value for point in find_entry_points(PLUGIN_GROUP)}


def device_type(value: str) -> str:
    """The client a ``PJRT_DEVICE`` value names, as torch_xla reads it (``"TPU_C_API"`` -> ``"TPU"``)."""
    return value.strip().split("_")[0]


def chosen_client() -> tuple[str, str] | Verdict:
    """``(client, how it was chosen)``, or the verdict where no XLA device is chosen."""
    value = os.environ.get(PJRT_DEVICE, "").strip()
    if value:
        return device_type(value), f"{PJRT_DEVICE}={value}"
    chips = tpu_chips()
    if chips and libtpu_found():
        return "TPU", f"{PJRT_DEVICE} is unset and {chips} TPU chip(s) and libtpu are found (torch_xla then picks TPU)"
    if chips:
        return Verdict.no_device(
            f"{chips} TPU chip(s) are attached but libtpu is not installed, and {PJRT_DEVICE} is unset",
            hint=TPU_HINT,
        )
    return Verdict.no_device(
        f"{PJRT_DEVICE} is unset and no TPU is attached: torch_xla would fall back to its CPU client, "
        "which accelhal does not take for a device",
        hint=DEFAULT_HINT,
    )


def cpu_devices() -> int | Verdict:
    """The devices of XLA's CPU client (``CPU_NUM_DEVICES``, default 1), or why the value is unusable."""
    raw = os.environ.get(CPU_NUM_DEVICES, "").strip() or "1"
    if not raw.isdecimal() or int(raw) < 1:
        return Verdict.broken(
            f"{CPU_NUM_DEVICES}={raw} is not a device count",
            hint=f"set {CPU_NUM_DEVICES} to a whole number >= 1, or unset it for one device",
        )
    return int(raw)


def count_devices(client: str, chosen: str) -> Verdict:
    """Available, saying how many devices ``client`` has (a plugin's only its runtime counts), or why there are none."""
    if client == "CPU":
        devices = cpu_devices()
        if isinstance(devices, Verdict):
            return devices
        return Verdict.available(f"{devices} device(s) of XLA's CPU client ({chosen})")
    if client == "TPU":
        chips = tpu_chips()
        if not chips:
            return Verdict.no_device(
                f"{chosen} but no TPU chip is attached (no PCI device of vendor {GOOGLE_PCI_VENDOR} "
                "with a TPU device id)"
            )
        if not libtpu_found():
            return Verdict.broken(f"{chosen} but torch_xla cannot find libtpu", hint=TPU_HINT)
        return Verdict.available(f"{chips} TPU chip(s) attached ({chosen})")
    plugin = plugin_clients()[client]
    return Verdict.available(f"{chosen}: the PJRT plugin {plugin}; its devices are counted once its runtime starts")


def find_device() -> Verdict:
    """Steps 1-3: available where a PJRT client is chosen and has devices; imports nothing, starts nothing."""
    chosen = chosen_client()
    if isinstance(chosen, Verdict):
        return chosen
    client, how = chosen
    known = sorted({*BUILT_IN_CLIENTS, *plugin_clients()})
    if client not in known:
        return Verdict.broken(
            f"{how} names no PJRT client torch_xla has here (it has {', '.join(known)})",
            hint=f"set {PJRT_DEVICE} to one of them, or install the PJRT plugin that provides {client}",
        )
    return count_devices(client, how)


def probe() -> Verdict:
    """:func:`find_device`, then ``import torch_xla`` where a device is found; never starts the runtime."""
    found = find_device()
    if not found.is_available:
        return found
    try:
        importlib.import_module("torch_xla")
    except Exception as exc:  # a torch_xla built for another torch fails with an undefined symbol, or worse
        return Verdict.broken(f"import torch_xla failed: {type(exc).__name__}: {exc}", hint=INSTALL_HINT)
    return found
