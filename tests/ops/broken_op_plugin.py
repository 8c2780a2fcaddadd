"""A plugin whose op-builder hook raises, and one that registers something that is not a builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import accelhal


class Raising:
    """Its hook raises."""

    @accelhal.hookimpl
    def accelhal_register_op_builders(self, register: Callable[[str, Any], None]) -> None:
        raise RuntimeError("the sample plugin's hook is broken")


class Junk:
    """Its hook registers a string where a builder class belongs."""

    @accelhal.hookimpl
    def accelhal_register_op_builders(self, register: Callable[[str, Any], None]) -> None:
        register("cpu", "NotAClass")
