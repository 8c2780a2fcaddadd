"""DeepSpeed's op-builder package for a device DeepSpeed has no accelerator for: it holds no builder modules.

DeepSpeed imports ``get_accelerator().op_builder_dir()`` and lists the builder modules in it
(``deepspeed.ops.op_builder.all_ops``, reached from ``deepspeed.init_distributed``), so the
package must exist. DeepSpeed's own op builders are written for the devices it ships
accelerators for; on another device none of them applies, so this package lists none.
accelhal's op builders for the device stay reachable by name through the adapter's
``get_op_builder``/``create_op_builder``.
"""
