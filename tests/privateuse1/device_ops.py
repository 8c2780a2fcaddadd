"""An accelhal plugin contributing an op for the test device through the ``accelhal_register_op_builders`` hook.

:class:`AxpyBuilder` builds ``csrc/axpy.cpp``: ``torch.ops.accelhal_testdev_ops.axpy(x,
y, alpha)`` is ``alpha * x + y`` with a kernel for the PrivateUse1 dispatch key only, over
the tensors' data pointers (the device's memory is host memory); the module's ``calls()``
counts its runs. The hook registers it for the device's type (the generic backend's
name), read from torch when the hook is called::

    module = accelhal.get_accelerator().create_op_builder("AxpyBuilder").load()
    torch.ops.accelhal_testdev_ops.axpy(x, y, 2.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import accelhal
from accelhal.ops import OpBuilder


class AxpyBuilder(OpBuilder):
    """``alpha * x + y`` for float32 tensors on the test device."""

    NAME: ClassVar[str] = "accelhal_testdev_axpy"
    BACKEND: ClassVar[str] = "testdev"

    def sources(self) -> list[str]:
        return ["csrc/axpy.cpp"]

    def cxx_args(self) -> list[str]:
        return ["-O1"]


@accelhal.hookimpl
def accelhal_register_op_builders(register: Callable[[str, type[OpBuilder]], None]) -> None:
    import torch

    register(torch._C._get_privateuse1_backend_name(), AxpyBuilder)
