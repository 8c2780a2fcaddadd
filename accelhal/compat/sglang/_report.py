"""Which platform SGLang would choose here, and why, for ``accelhal info``: :func:`platform_choice`."""

from __future__ import annotations

from importlib import util

from accelhal.compat._engines import PlatformChoice


def platform_choice() -> PlatformChoice | None:
    """What SGLang would run on here; ``None`` where SGLang is not installed.

    Imports SGLang's platform discovery (seconds) and runs it, with every platform plugin, as an
    SGLang process would; the chosen platform is instantiated, as SGLang does (no device context).
    """
    if util.find_spec("sglang") is None:
        return None
    from accelhal.compat._engines import platform_choice as choice
    from accelhal.compat.sglang._decision import ENGINE

    def resolve() -> str:
        from sglang.srt.platforms import current_platform

        kind = type(current_platform)
        return f"{kind.__module__}.{kind.__qualname__}"

    return choice(ENGINE, resolve)
