"""Whether the bridge is vLLM's platform here: the cheap probe behind the ``vllm.platform_plugins`` entry point.

vLLM calls every platform plugin's function in each of its processes and takes the
qualified name of the one out-of-tree plugin that answers. The bridge answers where
accelhal's active backend is a device vLLM does not serve itself, or where
``ACCELHAL_VLLM_PLATFORM=on`` forces it; it stays out where vLLM's built-in platform serves
the device (cuda, rocm, xpu, tpu; cpu unless forced) and where another out-of-tree platform
plugin answers (the device vendor's own, which vLLM could not run beside the bridge). The
probe creates no device context: accelhal's probes never do, and the accelerator is only
constructed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

logger = logging.getLogger("accelhal.compat.vllm")

VARIABLE = "ACCELHAL_VLLM_PLATFORM"
"""``auto`` (default): the bridge answers for devices vLLM does not serve; ``on``: it answers for any device
but those vLLM's GPU and TPU platforms serve (cpu included); ``off``: it never answers."""

MODES = ("auto", "on", "off")

PLATFORM_QUALNAME = "accelhal.compat.vllm._platform.AccelhalPlatform"
"""What the entry point answers: the class, imported by vLLM only once it has chosen the bridge."""

ENTRY_POINT = "accelhal"
"""The bridge's name in vLLM's ``vllm.platform_plugins`` group."""

SERVED_BY_VLLM: Mapping[str, str] = {
    "cuda": "vLLM's CudaPlatform (NVIDIA) or RocmPlatform (AMD)",
    "xpu": "vLLM's XPUPlatform",
    "xla": "vLLM's TpuPlatform",
}
"""Device types whose vLLM platform is built into vLLM: the bridge never takes them over, even forced."""

HOST_DEVICE = "cpu"
"""vLLM's CpuPlatform serves it; the bridge takes it over only when forced."""

Rule = Literal["disabled", "vendor-plugin", "served-by-vllm", "host", "selection-failed", "forced", "device"]


@dataclass(frozen=True)
class PlatformDecision:
    """What the probe decided, and why."""

    active: bool
    """Whether the bridge answers (vLLM then runs on ``PLATFORM_QUALNAME``)."""
    rule: Rule
    reason: str
    backend: str | None = None
    """accelhal's active backend, where selection succeeded."""
    device_type: str | None = None


def mode(environ: Mapping[str, str] | None = None) -> str:
    """:data:`VARIABLE`'s value: ``auto`` when unset, blank or ``auto``; else ``on`` or ``off``.

    ``on`` and ``off`` take accelhal's boolean spellings too (``1``/``0``, ``true``/``false``, ...:
    :func:`accelhal.process.settings.parse_bool`). Raises :class:`~accelhal.ConfigurationError` for anything else.
    """
    from accelhal.errors import ConfigurationError
    from accelhal.process.settings import BOOLEAN_SPELLINGS, parse_bool

    raw = (os.environ if environ is None else environ).get(VARIABLE, "").strip().lower()
    if raw in ("", "auto"):
        return "auto"
    try:
        return "on" if parse_bool(VARIABLE, raw) else "off"
    except ConfigurationError:
        message = f"{VARIABLE}={raw!r} is not one of {', '.join(MODES)} (on and off: {BOOLEAN_SPELLINGS})"
        raise ConfigurationError(message, variable=VARIABLE, value=raw) from None


def decide_for(
    device_type: str | None,
    backend: str | None,
    forced: bool,
    vendor_plugins: list[str],
    selection_error: str | None = None,
) -> PlatformDecision:
    """The decision for accelhal's active backend ``backend`` of ``device_type``, given the other answering plugins.

    Pure: the rules in order, from the facts :func:`decide` gathers. ``vendor_plugins`` are the
    other out-of-tree platform plugins of vLLM that answer here.
    """
    if device_type is None:
        reason = f"accelhal selected no backend: {selection_error}"
        return PlatformDecision(forced, "selection-failed", reason + ("; forced, so vLLM reports it" if forced else ""))
    facts = {"backend": backend, "device_type": device_type}
    if device_type in SERVED_BY_VLLM:
        return PlatformDecision(
            False, "served-by-vllm", f"{device_type!r} devices are served by {SERVED_BY_VLLM[device_type]}", **facts
        )
    if vendor_plugins and not forced:
        names = ", ".join(vendor_plugins)
        return PlatformDecision(False, "vendor-plugin", f"another vLLM platform plugin answers here ({names})", **facts)
    if device_type == HOST_DEVICE and not forced:
        return PlatformDecision(
            False, "host", f"vLLM's CpuPlatform serves cpu (set {VARIABLE}=on to use the bridge)", **facts
        )
    if forced:
        reason = f"{VARIABLE}=on: the bridge serves {backend!r}"
        if vendor_plugins:
            reason += (
                f", though {', '.join(vendor_plugins)} answer(s) too: vLLM refuses two platform plugins; "
                f"leave them out with VLLM_PLUGINS or unset {VARIABLE}"
            )
        return PlatformDecision(True, "forced", reason, **facts)
    return PlatformDecision(True, "device", f"vLLM has no platform of its own for {device_type!r} devices", **facts)


def answering_vendor_plugins(plugins: Mapping[str, Callable[[], str | None]]) -> list[str]:
    """The names of the plugins among ``plugins`` (vLLM's loaded platform plugins) but the bridge that answer."""
    answering = []
    for name, probe in plugins.items():
        if name == ENTRY_POINT:
            continue
        try:
            if probe() is not None:
                answering.append(name)
        except Exception:  # vLLM skips a plugin that raises: so does the bridge
            logger.debug("vLLM platform plugin %s raised while probed", name, exc_info=True)
    return answering


def _vllm_platform_plugins() -> dict[str, Callable[[], str | None]]:
    """vLLM's platform plugins as vLLM itself loads them (``VLLM_PLUGINS`` applied)."""
    from vllm.plugins import PLATFORM_PLUGINS_GROUP, load_plugins_by_group

    return dict(load_plugins_by_group(PLATFORM_PLUGINS_GROUP))


def decide(environ: Mapping[str, str] | None = None) -> PlatformDecision:
    """Decide for this process: the variable, accelhal's selection, and vLLM's other platform plugins."""
    current = mode(environ)
    if current == "off":
        return PlatformDecision(False, "disabled", f"{VARIABLE}=off")
    import accelhal

    try:
        accelerator = accelhal.get_accelerator()
    except Exception as exc:  # an AccelhalError, or a plugin's fault: reported, not raised into vLLM's loop
        return decide_for(None, None, current == "on", [], f"{type(exc).__name__}: {exc}")
    vendors: list[str] = []
    if accelerator.device_type not in SERVED_BY_VLLM:
        vendors = answering_vendor_plugins(_vllm_platform_plugins())
    return decide_for(accelerator.device_type, accelerator.name, current == "on", vendors)
