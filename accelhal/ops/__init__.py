"""Op builders: custom C++/CUDA kernels resolved through the active accelerator.

This is the lookup every accelerator's ``get_op_builder``/``create_op_builder`` goes
through. Builders are :class:`OpBuilder` subclasses contributed by plugins through the
``accelhal_register_op_builders`` hook, per backend name; an unknown name resolves to
:class:`NotImplementedBuilder`, whose use raises an error naming the op and the backend.
Importing this package imports neither torch nor a compiler.

>>> from accelhal import get_accelerator
>>> adamw = get_accelerator().create_op_builder("FusedAdamWBuilder").load()   # doctest: +SKIP
"""

from __future__ import annotations

from accelhal.ops.builder import Compatibility, OpBuilder
from accelhal.ops.lock import BuildLock, LockOwner
from accelhal.ops.registry import (
    NotImplementedBuilder,
    create_op_builder,
    get_op_builder,
    op_builder_dir,
    op_builders,
)

__all__ = [
    "BuildLock",
    "Compatibility",
    "LockOwner",
    "NotImplementedBuilder",
    "OpBuilder",
    "create_op_builder",
    "get_op_builder",
    "op_builder_dir",
    "op_builders",
]
