"""Which platform vLLM would choose here, and why, for ``accelhal info``: :func:`platform_choice`."""

from __future__ import annotations

from importlib import util

from accelhal.compat._engines import PlatformChoice

__all__ = ["PlatformChoice", "platform_choice"]


def platform_choice() -> PlatformChoice | None:
    """What vLLM would run on here; ``None`` where vLLM is not installed.

    Imports vLLM (seconds) and runs its own resolution, with the built-in probes and every
    platform plugin, as a vLLM process would; nothing is instantiated.
    """
    if util.find_spec("vllm") is None:
        return None
    from accelhal.compat._engines import platform_choice as choice
    from accelhal.compat.vllm._decision import ENGINE

    def resolve() -> str:
        from vllm.platforms import resolve_current_platform_cls_qualname

        return str(resolve_current_platform_cls_qualname())

    return choice(ENGINE, resolve)
