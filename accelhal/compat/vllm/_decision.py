"""Whether the bridge is vLLM's platform here: the cheap probe behind the ``vllm.platform_plugins`` entry point.

vLLM calls every platform plugin's function in each of its processes and takes the
qualified name of the one out-of-tree plugin that answers. The bridge answers by the rules
it shares with SGLang's bridge (:mod:`accelhal.compat._engines`): where accelhal's active
backend is a device vLLM does not serve itself, or where ``ACCELHAL_VLLM_PLATFORM=on``
forces it; it stays out where vLLM's built-in platform serves the device (cuda, rocm, xpu,
tpu; cpu unless forced) and where another out-of-tree platform plugin answers (the device
vendor's own, which vLLM could not run beside the bridge).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from accelhal.compat import _engines
from accelhal.compat._engines import PlatformDecision, Rule

__all__ = ["ENGINE", "PLATFORM_QUALNAME", "SERVED_BY_VLLM", "VARIABLE", "PlatformDecision", "Rule", "decide"]

VARIABLE = "ACCELHAL_VLLM_PLATFORM"
"""``auto`` (default): the bridge answers for devices vLLM does not serve; ``on``: it answers for any device
but those vLLM's GPU and TPU platforms serve (cpu included); ``off``: it never answers."""

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


def _vllm_platform_plugins() -> Mapping[str, Callable[[], object]]:
    """vLLM's platform plugins as vLLM itself loads them (``VLLM_PLUGINS`` applied)."""
    from vllm.plugins import PLATFORM_PLUGINS_GROUP, load_plugins_by_group

    return dict(load_plugins_by_group(PLATFORM_PLUGINS_GROUP))


ENGINE = _engines.Engine(
    name="vLLM",
    variable=VARIABLE,
    qualname=PLATFORM_QUALNAME,
    served=SERVED_BY_VLLM,
    served_rule="served-by-vllm",
    host_platform="vLLM's CpuPlatform",
    plugins_variable="VLLM_PLUGINS",
    other_plugins=_vllm_platform_plugins,
    entry_point=ENTRY_POINT,
)
"""What the shared rules need of vLLM."""


def mode(environ: Mapping[str, str] | None = None) -> str:
    """:data:`VARIABLE`'s value: ``auto`` when unset, blank or ``auto``; else ``on`` or ``off``."""
    return _engines.mode(ENGINE, environ)


def decide_for(
    device_type: str | None,
    backend: str | None,
    forced: bool,
    vendor_plugins: list[str],
    selection_error: str | None = None,
) -> PlatformDecision:
    """The decision for accelhal's active backend ``backend`` of ``device_type`` (see ``_engines.decide_for``)."""
    return _engines.decide_for(ENGINE, device_type, backend, forced, vendor_plugins, selection_error)


def decide(environ: Mapping[str, str] | None = None) -> PlatformDecision:
    """Decide for this process: the variable, accelhal's selection, and vLLM's other platform plugins."""
    return _engines.decide(ENGINE, environ)
