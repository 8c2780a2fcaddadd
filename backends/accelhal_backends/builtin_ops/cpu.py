"""The cpu backend's built-in op builders (C++ through the host compiler)."""

from __future__ import annotations

from typing import ClassVar

from accelhal.ops.builder import OpBuilder


class FusedAdamWBuilder(OpBuilder):
    """In-place AdamW step over flat float32 CPU tensors (``at::parallel_for``), matching ``torch.optim.AdamW``.

    >>> adamw = get_accelerator().create_op_builder("FusedAdamWBuilder").load()   # on cpu
    >>> adamw.adamw_step(param, grad, exp_avg, exp_avg_sq, 1e-3, 0.9, 0.999, 1e-8, 0.01, step)
    """

    NAME: ClassVar[str] = "fused_adamw"
    BACKEND: ClassVar[str] = "cpu"

    def sources(self) -> list[str]:
        """The one C++ file: kernel loop and binding."""
        return ["csrc/fused_adamw_cpu.cpp"]

    def cxx_args(self) -> list[str]:
        """Optimise. Built without ``-fopenmp``, so ``at::parallel_for`` runs the loop on the calling thread."""
        return ["-O3"]
