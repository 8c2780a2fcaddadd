"""vLLM's ``Platform`` built from the active accelhal backend: :data:`AccelhalPlatform`.

vLLM imports this module, in each of its processes, only once the bridge's probe has answered
(:mod:`accelhal.compat.vllm._decision`). The class is built then, from ``MEMBERS``: each
member comes from the source its row names, and nothing else decides. The installed vLLM's
release must lie in :data:`~accelhal.compat.vllm._releases.SUPPORTED` (checked first).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from vllm.platforms.cpu import CpuPlatform
from vllm.platforms.interface import DeviceCapability, Platform, PlatformEnum

import accelhal
from accelhal.compat import _engines
from accelhal.compat.vllm._decision import mode
from accelhal.compat.vllm._members import MEMBERS
from accelhal.compat.vllm._releases import SHAPES, SUPPORTED
from accelhal.compat.vllm.kit import PORTABLE, VllmKit
from accelhal.contract.spec import Capability
from accelhal.selection import registry

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.contract.spec import BackendSpec

CPU_WORKER = "vllm.v1.worker.cpu_worker.CPUWorker"
DEVICE_WORKER = "accelhal.compat.vllm._worker.DeviceWorker"
"""The portable path's worker on a device other than the host: vLLM's CPU worker, on the device."""
CPU_COMMUNICATOR = "vllm.distributed.device_communicators.cpu_communicator.CpuCommunicator"
BASE_COMMUNICATOR = "vllm.distributed.device_communicators.base_device_communicator.DeviceCommunicatorBase"
"""vLLM's communicator over ``torch.distributed`` with the platform's ``dist_backend``."""
VLLM_DTYPE_ORDER = (torch.bfloat16, torch.float16, torch.float32)
"""vLLM's order of preference: the first supported dtype is its fallback for ``dtype="auto"``."""


class ContractAnswers:
    """The members answered by the accelhal contract, the spec and the kit; :func:`build` picks them by row."""

    accelerator: ClassVar[Accelerator]
    spec: ClassVar[BackendSpec]
    kit: ClassVar[VllmKit]

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        """The backend's dtypes, in vLLM's order of preference."""
        supported = set(type(self).accelerator.supported_dtypes())
        return [dtype for dtype in VLLM_DTYPE_ORDER if dtype in supported]

    @classmethod
    def get_compile_backend(cls) -> str:
        """The backend's ``torch.compile`` backend."""
        return cls.accelerator.get_compile_backend()

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        """Make ``device`` current (a device without an index leaves the current one)."""
        if device.index is not None:
            cls.accelerator.set_device(device.index)

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        """The product name of device ``device_id``."""
        return cls.accelerator.device_description(device_id)

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        """Bytes of memory of device ``device_id``."""
        return cls.accelerator.total_memory(device_id)

    @classmethod
    def get_current_memory_usage(cls, device: Any = None) -> float:
        """Bytes allocated on ``device`` (default: the current device)."""
        index = torch.device(device).index if device is not None else None
        return float(cls.accelerator.memory_allocated(index))

    @classmethod
    def get_device_capability(cls, device_id: int = 0) -> DeviceCapability | None:
        """The device's ``major.minor`` capability, where its runtime has one."""
        found = cls.accelerator.device_capability(device_id)
        if not found:
            return None
        major, _, minor = found.partition(".")
        return DeviceCapability(major=int(major), minor=int(minor or 0))

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        """Seed every device's generator."""
        cls.accelerator.manual_seed_all(seed)

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        """Whether the backend page-locks host memory for its device (its ``pinning`` capability)."""
        return Capability.PINNING in cls.accelerator.capabilities

    @classmethod
    def import_kernels(cls) -> None:
        """vLLM's own kernels (the portable path's), then the modules of the kit, which register the device's."""
        CpuPlatform.import_kernels.__func__(cls)
        for module in cls.kit.kernels:
            __import__(module)

    @classmethod
    def get_attn_backend_cls(cls, *args: Any, **kwargs: Any) -> str:
        """The kit's attention backend; else the portable path's choice."""
        if cls.kit.attention_backend:
            return cls.kit.attention_backend
        return str(CpuPlatform.get_attn_backend_cls.__func__(cls, *args, **kwargs))

    @classmethod
    def get_punica_wrapper(cls) -> str:
        """The kit's LoRA wrapper; else the portable path's."""
        return cls.kit.punica_wrapper or CpuPlatform.get_punica_wrapper()

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        """The kit's communicator; else vLLM's CPU communicator on cpu, its base communicator elsewhere."""
        if cls.kit.device_communicator:
            return cls.kit.device_communicator
        return CPU_COMMUNICATOR if cls.spec.device_type == "cpu" else BASE_COMMUNICATOR

    @classmethod
    def check_and_update_config(cls, vllm_config: Any) -> None:
        """The portable path's configuration, then the worker: the kit's, else the portable one for the device."""
        with _as_host(vllm_config.device_config):  # CpuPlatform's asserts the host's device type
            CpuPlatform.check_and_update_config.__func__(cls, vllm_config)
        parallel = vllm_config.parallel_config
        if parallel.worker_cls in ("auto", CPU_WORKER):
            parallel.worker_cls = cls.kit.worker or (CPU_WORKER if cls.spec.device_type == "cpu" else DEVICE_WORKER)

    @classmethod
    def support_static_graph_mode(cls) -> bool:
        """Whether the kit has a graph wrapper and the backend declares graphs."""
        return bool(cls.kit.graph_wrapper) and Capability.GRAPHS in cls.accelerator.capabilities

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        """The kit's graph wrapper; else vLLM's abstract one."""
        return cls.kit.graph_wrapper or Platform.get_static_graph_wrapper_cls()

    def __getattr__(self, key: str) -> Any:
        """The accelerator's member ``key``; else, as vLLM's ``Platform`` does, ``torch.<device_type>``'s."""
        if key.startswith("__") and key.endswith("__"):
            raise AttributeError(key)
        found = getattr(type(self).accelerator, key, None)
        if found is not None:
            return found
        return Platform.__getattr__(self, key)


@contextlib.contextmanager
def _as_host(device_config: Any) -> Iterator[None]:
    """While it runs, ``device_config`` names the host (vLLM's CPU configuration asserts it), then its device again."""
    device_type, device = device_config.device_type, device_config.device
    device_config.device_type, device_config.device = "cpu", torch.device("cpu")
    try:
        yield
    finally:
        device_config.device_type, device_config.device = device_type, device


def _dispatch_key(device_type: str) -> str:
    """torch's dispatch key of ``device_type`` (``"PrivateUse1"`` for an out-of-tree device)."""
    with contextlib.suppress(Exception):
        return str(torch._C._dispatch_key_for_device(device_type))
    return "CPU"


def _ray_device_key(accelerator: Accelerator) -> str:
    """The Ray resource of the backend's devices (accelhal's Ray adapter); ``""`` without Ray or on the host."""
    try:
        from accelhal.compat.ray._resources import bind

        binding = bind(accelerator.name, accelerator.device_type, accelerator.visible_devices_envs())
    except ImportError:
        return ""
    return binding.resource or ""


def _exported(accelerator: Accelerator) -> list[str]:
    """The variables set here whose names start with one of the backend's exported prefixes."""
    prefixes = tuple(accelerator.export_envs())
    return sorted(name for name in os.environ if prefixes and name.startswith(prefixes))


def kit_for(backend: str) -> VllmKit:
    """The kit a plugin's ``accelhal_vllm_kit`` hook returns for ``backend``; :data:`PORTABLE` if none does."""
    return _engines.kit_for("accelhal_vllm_kit", backend, VllmKit, PORTABLE)


def attributes(accelerator: Accelerator, spec: BackendSpec, kit: VllmKit) -> dict[str, Any]:
    """The class attributes answered by the spec, the contract and the kit (rows whose member is data)."""
    visible = list(accelerator.visible_devices_envs())
    return {
        "_enum": PlatformEnum.CPU if spec.device_type == "cpu" else PlatformEnum.OOT,
        "device_name": spec.name,
        "device_type": spec.device_type,
        "dispatch_key": _dispatch_key(spec.device_type),
        "ray_device_key": _ray_device_key(accelerator),
        "device_control_env_var": visible[0] if visible else CpuPlatform.device_control_env_var,
        "ray_noset_device_env_vars": [f"RAY_EXPERIMENTAL_NOSET_{name}" for name in visible],
        "additional_env_vars": _exported(accelerator),
        "simple_compile_backend": accelerator.get_compile_backend(),
        "dist_backend": accelerator.communication_backend_name(),
    }


def build(accelerator: Accelerator, spec: BackendSpec, kit: VllmKit, lacking: frozenset[str]) -> type[Platform]:
    """vLLM's ``Platform`` for ``accelerator``: each member from the source ``MEMBERS`` names.

    ``lacking``: the members the installed release's ``Platform`` does not have (its row of ``SHAPES``).
    """
    data = attributes(accelerator, spec, kit)
    namespace: dict[str, Any] = {"accelerator": accelerator, "spec": spec, "kit": kit, "__module__": __name__}
    for member, answer in MEMBERS.items():
        if answer.source == "vllm" or member in lacking:
            continue
        if member in data:
            namespace[member] = data[member]
        elif answer.source == "portable":
            namespace[member] = CpuPlatform.__dict__[member]
        else:
            namespace[member] = ContractAnswers.__dict__[member]
    name = "Accelhal" + "".join(part.capitalize() for part in spec.name.split("_")) + "Platform"
    namespace["__qualname__"] = name
    namespace["__doc__"] = f"vLLM's platform for accelhal's {spec.name!r} backend (built by accelhal.compat.vllm)."
    return type(name, (Platform,), namespace)


def _active() -> type[Platform]:
    mode()  # a wrong ACCELHAL_VLLM_PLATFORM is raised here, where vLLM does not swallow it
    release = SUPPORTED.check()
    accelerator = accelhal.get_accelerator()
    spec = registry().backends[accelerator.name].spec
    return build(accelerator, spec, kit_for(spec.name), SHAPES.shape_for(release))


AccelhalPlatform = _active()
"""The platform vLLM instantiates: built once per process, for accelhal's active backend."""
