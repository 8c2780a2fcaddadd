"""A small third-party plugin contributing an op builder through the hook (registered by the tests)."""

from __future__ import annotations

from collections.abc import Callable

import accelhal
from accelhal.ops import OpBuilder

calls: list[str] = []
"""One entry per call of the hook, so the tests can see when (and how often) it ran."""


@accelhal.hookimpl
def accelhal_register_op_builders(register: Callable[[str, type[OpBuilder]], None]) -> None:
    from tiny_ops import TinyAnswerBuilder

    calls.append("called")
    register("cpu", TinyAnswerBuilder)
