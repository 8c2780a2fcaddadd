"""Whether the bridge is SGLang's platform here: the cheap probe behind the ``sglang.srt.platforms`` entry point.

SGLang calls every platform plugin's ``activate()`` in each of its processes (only the one
``SGLANG_PLATFORM`` names, where set) and takes the class of the one plugin that answers; with
none, its own platforms in order. The bridge answers by the rules it shares with vLLM's bridge
(:mod:`accelhal.compat._engines`): where accelhal's active backend is a device SGLang has no
platform for, or where ``ACCELHAL_SGLANG_PLATFORM=on`` forces it. It stays out where SGLang's
own platform serves the device (cuda for NVIDIA, AMD and SAIL, xpu, npu, musa, mps), where
another SGLang platform plugin answers (the vendor's own), and on cpu where SGLang's own CPU
engine is asked for (``SGLANG_USE_CPU_ENGINE=1``) unless forced.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from accelhal.compat import _engines
from accelhal.compat._engines import PlatformDecision

VARIABLE = "ACCELHAL_SGLANG_PLATFORM"
"""``auto`` (default): the bridge answers for devices SGLang does not serve; ``on``: also on cpu beside SGLang's
CPU engine and beside a vendor's plugin; never for the devices SGLang's own platforms serve; ``off``: never."""

PLATFORM_QUALNAME = "accelhal.compat.sglang._platform:AccelhalPlatform"
"""What ``activate()`` answers: the class, imported by SGLang only once it has chosen the bridge."""

ENTRY_POINT = "accelhal"
"""The bridge's name in SGLang's ``sglang.srt.platforms`` group (``SGLANG_PLATFORM=accelhal`` chooses it)."""

SERVED_BY_SGLANG: Mapping[str, str] = {
    "cuda": "SGLang's CudaSRTPlatform (NVIDIA), RocmSRTPlatform (AMD) or SailSRTPlatform",
    "xpu": "SGLang's XpuSRTPlatform",
    "npu": "SGLang's NPUSRTPlatform",
    "musa": "SGLang's MusaSRTPlatform",
    "mps": "SGLang's MpsSRTPlatform",
}
"""Device types whose SGLang platform is built into SGLang: the bridge never takes them over, even forced."""

CPU_ENGINE = "SGLANG_USE_CPU_ENGINE"
"""SGLang's own variable: ``1`` asks for its CPU engine (``CpuSRTPlatform`` and its CPU kernels)."""


def _sglang_platform_plugins() -> Mapping[str, Callable[[], object]]:
    """SGLang's platform plugins as SGLang loads them; none but the bridge where ``SGLANG_PLATFORM`` is set."""
    if os.environ.get("SGLANG_PLATFORM"):  # SGLang loads only the plugin it names: this one
        return {}
    from sglang.srt.plugins import PLATFORM_PLUGINS_GROUP, load_plugins_by_group

    return {name: found[0] for name, found in load_plugins_by_group(PLATFORM_PLUGINS_GROUP).items()}


ENGINE = _engines.Engine(
    name="SGLang",
    variable=VARIABLE,
    qualname=PLATFORM_QUALNAME,
    served=SERVED_BY_SGLANG,
    served_rule="served-by-sglang",
    host_platform="SGLang's CpuSRTPlatform",
    plugins_variable="SGLANG_PLATFORM",
    other_plugins=_sglang_platform_plugins,
    host_served=lambda environ: environ.get(CPU_ENGINE, "0") == "1",
    entry_point=ENTRY_POINT,
)
"""What the shared rules need of SGLang."""


def mode(environ: Mapping[str, str] | None = None) -> str:
    """:data:`VARIABLE`'s value: ``auto`` when unset, blank or ``auto``; else ``on`` or ``off``."""
    return _engines.mode(ENGINE, environ)


def decide_for(
    device_type: str | None,
    backend: str | None,
    forced: bool,
    vendor_plugins: list[str],
    selection_error: str | None = None,
    cpu_engine: bool = False,
) -> PlatformDecision:
    """The decision for accelhal's active backend ``backend`` of ``device_type``; ``cpu_engine``: SGLang's asked for."""
    return _engines.decide_for(
        ENGINE, device_type, backend, forced, vendor_plugins, selection_error, host_served=cpu_engine
    )


def decide(environ: Mapping[str, str] | None = None) -> PlatformDecision:
    """Decide for this process: the variable, accelhal's selection, and SGLang's other platform plugins."""
    return _engines.decide(ENGINE, environ)
