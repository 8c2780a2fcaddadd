"""The musa accelerator: Moore Threads GPUs through ``torch.musa`` (the ``torch_musa`` package).

Differs from the shared base by graphs (``MUSAGraph``) and its names. torch_musa keeps its
lazy-call queue out of its public names, so ``lazy_call`` runs the callback at once (the
torch_musa functions a callback calls initialise the runtime themselves).
"""

from __future__ import annotations

from accelhal.contract import Accelerator
from accelhal.device_module import DEVICE_CAPABILITIES, GraphDeviceModuleAccelerator
from accelhal.spec import Capability


class MusaAccelerator(GraphDeviceModuleAccelerator):
    """Moore Threads GPUs through ``torch.musa``."""

    _name = "musa"
    device_type = "musa"
    _vendor_package = "torch_musa"
    _module_name = "torch_musa"
    _install_hint = "install torch_musa and the MUSA toolkit"
    _graph_class = "MUSAGraph"
    _communication_backend_name = "mccl"
    _visible_devices_envs = ("MUSA_VISIBLE_DEVICES",)
    _export_envs = ("MUSA", "MCCL", "LD_LIBRARY", "PATH")
    capabilities = DEVICE_CAPABILITIES | {Capability.GRAPHS}

    lazy_call = Accelerator.lazy_call
