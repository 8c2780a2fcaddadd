"""accelhal's built-in op builders, contributed through the same hook a third-party plugin uses.

Registered by accelhal's own ``pyproject.toml`` (entry point ``builtin_ops``). Importing this package imports no
torch and no compiler. Builders: ``FusedAdamWBuilder`` for ``cpu`` (C++, :mod:`.cpu`) and ``cuda`` (a CUDA
kernel, :mod:`.cuda`). See ``docs/ops.md``, "Built-in ops".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from accelhal.discovery.hooks import hookimpl

if TYPE_CHECKING:  # the builders' machinery is imported when a builder is asked for, not at discovery
    from accelhal.ops.builder import OpBuilder


@hookimpl
def accelhal_register_op_builders(register: Callable[[str, type[OpBuilder]], None]) -> None:
    """Contribute the built-in op builders of the cpu and cuda backends."""
    from accelhal_backends.builtin_ops import cpu, cuda

    register("cpu", cpu.FusedAdamWBuilder)
    register("cuda", cuda.FusedAdamWBuilder)
