"""Which platform vLLM would choose here, and why, for ``accelhal info``: :func:`platform_choice`."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import util


@dataclass(frozen=True)
class PlatformChoice:
    """vLLM's choice of platform in this environment, and the bridge's reason to answer or stay out."""

    platform: str
    """The qualified name vLLM's own resolution gives (``vllm.platforms.cpu.CpuPlatform``), or why it failed."""
    bridge: str
    """The bridge's decision, one sentence."""


def platform_choice() -> PlatformChoice | None:
    """What vLLM would run on here; ``None`` where vLLM is not installed.

    Imports vLLM (seconds) and runs its own resolution, with the built-in probes and every
    platform plugin, as a vLLM process would; nothing is instantiated.
    """
    if util.find_spec("vllm") is None:
        return None
    from accelhal.compat.vllm._decision import decide

    try:
        from vllm.platforms import resolve_current_platform_cls_qualname

        platform = resolve_current_platform_cls_qualname()
    except Exception as exc:  # vLLM refuses (two plugins answer) or fails to import: say so
        platform = f"none: vLLM fails to choose ({type(exc).__name__}: {exc})"
    try:
        decision = decide()
        bridge = ("answers: " if decision.active else "stays out: ") + decision.reason
    except Exception as exc:  # a wrong ACCELHAL_VLLM_PLATFORM
        bridge = f"{type(exc).__name__}: {exc}"
    return PlatformChoice(platform, bridge)
