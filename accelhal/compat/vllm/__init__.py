"""vLLM on any accelhal backend: a vLLM platform plugin built from the accelhal contract.

accelhal registers :func:`platform_plugin` in vLLM's ``vllm.platform_plugins`` entry-point
group. In every vLLM process the plugin's cheap probe decides (:func:`decide`): where
accelhal's active backend is a device vLLM has no platform for, vLLM runs on
``AccelhalPlatform``, whose every member is answered by the backend's contract, its spec, or
the :class:`VllmKit` its plugin returns from the ``accelhal_vllm_kit`` hook (the table:
``MEMBERS``). ``ACCELHAL_VLLM_PLATFORM`` (``auto``, ``on``, ``off``) forces it. Where
vLLM's own platform serves the device (cuda, rocm, xpu, tpu; cpu unless forced) or the
vendor's own vLLM plugin answers, the bridge stays out. ``docs/vllm.md`` has the details.

Example::

    $ ACCELHAL_VLLM_PLATFORM=on vllm serve ./model      # vLLM on accelhal's active backend
    >>> from accelhal.compat.vllm import decide
    >>> decide().reason
    "vLLM's CpuPlatform serves cpu (set ACCELHAL_VLLM_PLATFORM=on to use the bridge)"
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
