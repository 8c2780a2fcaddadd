"""Op builders: custom C++/CUDA kernels resolved through the active accelerator.

This is the lookup every accelerator's ``get_op_builder``/``create_op_builder`` goes
through. Builders are contributed by plugins through the
``accelhal_register_op_builders`` hook, per backend name; an unknown name resolves to
:class:`NotImplementedBuilder`, whose use raises an error naming the op and the backend.
"""

from __future__ import annotations

from accelhal.ops.registry import NotImplementedBuilder, get_op_builder, op_builder_dir

__all__ = ["NotImplementedBuilder", "get_op_builder", "op_builder_dir"]
