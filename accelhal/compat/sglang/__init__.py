"""SGLang on any accelhal backend: an SGLang platform plugin built from the accelhal contract.

accelhal registers :func:`activate` in SGLang's ``sglang.srt.platforms`` entry-point group. In
every SGLang process the plugin's cheap probe decides (:func:`decide`, by the rules vLLM's
bridge follows too): where accelhal's active backend is a device SGLang has no platform for,
SGLang runs on ``AccelhalPlatform``, whose every member is answered by the backend's contract,
its spec, or the :class:`SglangKit` its plugin returns from the ``accelhal_sglang_kit`` hook
(the table: ``MEMBERS``). ``ACCELHAL_SGLANG_PLATFORM`` (``auto``, ``on``, ``off``) forces it.
Where SGLang's own platform serves the device (cuda, xpu, npu, musa, mps; cpu under
``SGLANG_USE_CPU_ENGINE=1`` unless forced) or the vendor's own SGLang plugin answers, the bridge
stays out. ``docs/sglang.md`` has the details.

Example::

    $ ACCELHAL_SGLANG_PLATFORM=on python -m sglang.launch_server --model-path ./model
    >>> from accelhal.compat.sglang import decide
    >>> decide().rule
    'device'
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
