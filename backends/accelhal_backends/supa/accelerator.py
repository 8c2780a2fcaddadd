"""The supa accelerator: Biren GPUs through ``torch.supa`` (registered by ``torch_supa``).

Differs from the shared base by graphs (``SUPAGraph``), profiler ranges (``torch.supa.brtx``)
and its names. Fixed from DeepSpeed: ``is_bf16_supported``/``is_fp16_supported`` ask the
runtime instead of answering True without a device; ``memory_stats`` and the reserved
figures are the runtime's (DeepSpeed returned ``None`` where it could not find them);
``range_push``/``range_pop`` open BRTX ranges (DeepSpeed: no-ops); available memory is the
driver's free figure (``mem_get_info``), not total minus allocated.
"""

from __future__ import annotations

from accelhal.device_module import DEVICE_CAPABILITIES, GraphDeviceModuleAccelerator
from accelhal.spec import Capability


class SupaAccelerator(GraphDeviceModuleAccelerator):
    """Biren GPUs through ``torch.supa``."""

    _name = "supa"
    device_type = "supa"
    _vendor_package = "torch_supa"
    _module_name = "torch.supa"
    _install_hint = "install torch_supa from the birensupa-sdk and source its brsw_set_env.sh"
    _graph_class = "SUPAGraph"
    _ranges_module = "brtx"
    _communication_backend_name = "bccl"
    _visible_devices_envs = ("SUPA_VISIBLE_DEVICES",)
    _export_envs = ("BCCL", "BIREN", "SUPA", "LD_LIBRARY", "PATH")
    capabilities = DEVICE_CAPABILITIES | {Capability.GRAPHS, Capability.RANGES}
