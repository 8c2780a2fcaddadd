"""SGLang on any accelhal backend: an SGLang platform plugin built from the accelhal contract.

accelhal registers :func:`activate` in SGLang's ``sglang.srt.platforms`` entry-point group; its
cheap probe (:func:`decide`, by the rules of vLLM's bridge) answers where accelhal's active
backend is a device SGLang has no platform for, and SGLang then runs on ``AccelhalPlatform``,
whose members the backend's contract, its spec or its plugin's :class:`SglangKit` answer (the
table: ``MEMBERS``). ``ACCELHAL_SGLANG_PLATFORM`` (``auto``, ``on``, ``off``) forces it. See
``docs/sglang.md``.
"""

from __future__ import annotations

from accelhal.compat._engines import PlatformDecision, plugin_answer
from accelhal.compat._members import Answer
from accelhal.compat.sglang._decision import (
    ENGINE,
    PLATFORM_QUALNAME,
    SERVED_BY_SGLANG,
    VARIABLE,
    decide,
    decide_for,
)
from accelhal.compat.sglang._members import MEMBERS
from accelhal.compat.sglang.kit import SglangKit

__all__ = [
    "MEMBERS",
    "PLATFORM_QUALNAME",
    "SERVED_BY_SGLANG",
    "VARIABLE",
    "Answer",
    "PlatformDecision",
    "SglangKit",
    "activate",
    "decide",
    "decide_for",
]


def activate() -> str | None:
    """SGLang's platform-plugin function: ``PLATFORM_QUALNAME`` when the bridge serves this process, else ``None``.

    Cheap and free of device contexts (see :func:`decide`); SGLang calls it in each process it starts.
    A wrong ``ACCELHAL_SGLANG_PLATFORM`` is not swallowed by SGLang's loop: the plugin answers, and
    importing the platform raises the :class:`~accelhal.ConfigurationError`.
    """
    return plugin_answer(ENGINE)
