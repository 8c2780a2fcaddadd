"""vLLM on any accelhal backend: a vLLM platform plugin built from the accelhal contract.

accelhal registers :func:`platform_plugin` in vLLM's ``vllm.platform_plugins`` entry-point
group; its cheap probe (:func:`decide`) answers where accelhal's active backend is a device vLLM
has no platform for, and vLLM then runs on ``AccelhalPlatform``, whose members the backend's
contract, its spec or its plugin's :class:`VllmKit` answer (the table: ``MEMBERS``).
``ACCELHAL_VLLM_PLATFORM`` (``auto``, ``on``, ``off``) forces it. See ``docs/vllm.md``.
"""

from __future__ import annotations

from accelhal.compat._engines import plugin_answer
from accelhal.compat.vllm._decision import (
    ENGINE,
    PLATFORM_QUALNAME,
    SERVED_BY_VLLM,
    VARIABLE,
    PlatformDecision,
    decide,
    decide_for,
)
from accelhal.compat.vllm._members import MEMBERS, Answer
from accelhal.compat.vllm.kit import VllmKit

__all__ = [
    "MEMBERS",
    "PLATFORM_QUALNAME",
    "SERVED_BY_VLLM",
    "VARIABLE",
    "Answer",
    "PlatformDecision",
    "VllmKit",
    "decide",
    "decide_for",
    "platform_plugin",
]


def platform_plugin() -> str | None:
    """vLLM's platform-plugin function: ``PLATFORM_QUALNAME`` when the bridge serves this process, else ``None``.

    Cheap and free of device contexts (see :func:`decide`); vLLM calls it in each process it starts.
    A decision that is not the default one is logged, at INFO when the bridge answers and at WARNING
    when it was forced and still stays out. A wrong ``ACCELHAL_VLLM_PLATFORM`` is not swallowed by vLLM's
    loop: the plugin answers, and building the platform raises the :class:`~accelhal.ConfigurationError`.
    """
    return plugin_answer(ENGINE)
