"""SGLang's ``SRTPlatform`` built from the active accelhal backend: :data:`AccelhalPlatform`.

SGLang imports this module, in each of its processes, only once the bridge's ``activate()``
has answered (:mod:`accelhal.compat.sglang._decision`). The class is built then, from
``MEMBERS``: each member comes from the source its row names, and nothing else decides. The
installed SGLang's release must lie in :data:`~accelhal.compat.sglang._releases.SUPPORTED`
(checked first, before the bridge imports SGLang's platform classes or builds anything).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any, ClassVar

from accelhal.compat.sglang._decision import mode
from accelhal.compat.sglang._releases import SHAPES, SUPPORTED

mode()  # a wrong ACCELHAL_SGLANG_PLATFORM is raised here, where SGLang does not swallow it
_RELEASE = SUPPORTED.check()

import torch  # noqa: E402
from sglang.srt.platforms.device_mixin import DeviceCapability, PlatformEnum  # noqa: E402
from sglang.srt.platforms.interface import PlatformCapabilities, SRTPlatform  # noqa: E402

import accelhal  # noqa: E402
from accelhal.compat import _engines  # noqa: E402
from accelhal.compat.sglang._members import MEMBERS  # noqa: E402
from accelhal.compat.sglang.kit import PORTABLE, SglangKit  # noqa: E402
from accelhal.contract.spec import Capability  # noqa: E402
from accelhal.selection import registry  # noqa: E402

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.contract.spec import BackendSpec

PORTABLE_ATTENTION = "torch_native"
"""SGLang's attention backend in torch's own operators: it runs wherever torch does."""
PORTABLE_DIST_BACKEND = "gloo"
"""``torch.distributed``'s backend on the host, for a backend whose contract names no collective backend."""
PORTABLE_FUSED_OP_KEY = "native"
"""SGLang's fused ops' ``forward_native``: torch's own operators."""


class ContractAnswers:
    """The members answered by the accelhal contract, the kit and the portable path; :func:`build` picks them by row."""

    accelerator: ClassVar[Accelerator]
    spec: ClassVar[BackendSpec]
    kit: ClassVar[SglangKit]

    def get_device(self, device_id: int | None = 0) -> str:
        """SGLang's device string: the device type, or device ``device_id``'s name."""
        accelerator = type(self).accelerator
        return accelerator.device_type if device_id is None else accelerator.device_name(device_id)

    def set_device(self, device: Any) -> None:
        """Make ``device`` current (a device without an index leaves the current one)."""
        index = torch.device(device).index
        if index is not None:
            type(self).accelerator.set_device(index)

    def get_device_name(self, device_id: int = 0) -> str:
        """The product name of device ``device_id``."""
        return type(self).accelerator.device_description(device_id)

    def get_device_uuid(self, device_id: int = 0) -> str:
        """A stable name of device ``device_id`` on this host (the contract has no UUID)."""
        return f"{socket.gethostname()}-{type(self).accelerator.device_name(device_id)}"

    def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
        """The device's ``major.minor`` capability, where its runtime has one."""
        found = type(self).accelerator.device_capability(device_id)
        if not found:
            return None
        major, _, minor = found.partition(".")
        return DeviceCapability(major=int(major), minor=int(minor or 0))

    def get_device_total_memory(self, device_id: int = 0) -> int:
        """Bytes of memory of device ``device_id``."""
        return type(self).accelerator.total_memory(device_id)

    def get_current_memory_usage(self, device: Any = None) -> float:
        """Bytes in use on ``device`` (default: the current one): total less available, as SGLang reads it."""
        accelerator = type(self).accelerator
        index = torch.device(device).index if device is not None else None
        return float(accelerator.total_memory(index) - accelerator.available_memory(index))

    def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
        """``(available, total)`` bytes of device ``device_id``."""
        accelerator = type(self).accelerator
        return accelerator.available_memory(device_id), accelerator.total_memory(device_id)

    def empty_cache(self) -> None:
        """Release the backend's cached memory."""
        type(self).accelerator.empty_cache()

    def synchronize(self) -> None:
        """Wait for the current device's work."""
        type(self).accelerator.synchronize()

    def is_pin_memory_available(self, device: Any = None) -> bool:
        """Whether the backend page-locks host memory for its device (its ``pinning`` capability)."""
        return Capability.PINNING in type(self).accelerator.capabilities

    def seed_everything(self, seed: int | None = None) -> None:
        """SGLang's seeding (Python, numpy, torch), then every device's generator."""
        SRTPlatform.seed_everything(seed)
        if seed is not None:
            type(self).accelerator.manual_seed_all(seed)

    def get_torch_profiler_activity_str(self) -> str:
        """The profiler's activity: the host's (the contract names none for a device)."""
        return "CPU"

    def get_torch_profiler_activity(self) -> torch.profiler.ProfilerActivity:
        """The profiler's activity: the host's."""
        return torch.profiler.ProfilerActivity.CPU

    def get_torch_distributed_backend_str(self) -> str:
        """The backend's ``torch.distributed`` backend; ``gloo`` (the host's) where it names none."""
        return type(self).accelerator.communication_backend_name() or PORTABLE_DIST_BACKEND

    def get_communicator_class(self) -> type | None:
        """The kit's communicator class; else SGLang's default (none)."""
        return _imported(type(self).kit.communicator)

    def apply_server_args_defaults(self, server_args: Any) -> None:
        """The portable path's defaults: torch's sampler, where none was chosen (SGLang's default is CUDA's)."""
        if getattr(server_args, "sampling_backend", "pytorch") is None:
            server_args.sampling_backend = "pytorch"

    def init_backend(self) -> None:
        """Complete the device's torch module from the contract, then import the kit's modules (in each worker)."""
        complete_device_module(type(self).accelerator)
        for module in type(self).kit.kernels:
            __import__(module)

    def get_dispatch_key_name(self) -> str:
        """The kit's fused-op key; else ``native`` (torch's own operators)."""
        return type(self).kit.fused_op_key or PORTABLE_FUSED_OP_KEY

    def get_compile_backend(self, mode: str | None = None) -> str:
        """The backend's ``torch.compile`` backend."""
        return type(self).accelerator.get_compile_backend()

    def get_default_attention_backend(self) -> str:
        """The kit's attention backend; else ``torch_native``."""
        return type(self).kit.attention_backend or PORTABLE_ATTENTION

    def get_graph_runner_cls(self) -> type | None:
        """The kit's graph runner class; else none (SGLang runs eagerly)."""
        return _imported(type(self).kit.graph_runner)


DEVICE_MODULE_MEMBERS = (
    *("Stream", "Event", "stream", "current_stream", "default_stream", "is_current_stream_capturing"),
    *("synchronize", "set_device", "current_device", "device_count", "is_available", "empty_cache"),
    *("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats"),
    *("manual_seed", "manual_seed_all"),
)
"""What SGLang's core calls on ``torch.get_device_module(device)`` outside its platform, as torch.cuda has it."""
DEVICE_MODULE_ALIASES = {"StreamContext": "stream"}
"""torch.cuda's names for what the contract calls otherwise: ``StreamContext(stream)`` is ``stream(stream)``."""


def complete_device_module(accelerator: Accelerator) -> list[str]:
    """Give ``torch.<device_type>`` each of :data:`DEVICE_MODULE_MEMBERS` it lacks, from the contract; their names.

    A member the module has is never replaced; one the contract answers with ``None`` (a runtime
    without streams has no ``Stream``) is left out.
    """
    module = torch.get_device_module(accelerator.device_type)
    added = []
    for name in (*DEVICE_MODULE_MEMBERS, *DEVICE_MODULE_ALIASES):
        if hasattr(module, name):
            continue
        value = getattr(accelerator, DEVICE_MODULE_ALIASES.get(name, name), None)
        if value is not None:
            setattr(module, name, value)
            added.append(name)
    return added


def _imported(qualname: str) -> type | None:
    """The class named ``qualname`` (``"pkg.module.Class"`` or ``"pkg.module:Class"``); ``None`` for ``""``."""
    if not qualname:
        return None
    import pkgutil

    found = pkgutil.resolve_name(qualname)
    if not isinstance(found, type):
        raise TypeError(f"{qualname!r} names {found!r}, not a class")
    return found


def capabilities(accelerator: Accelerator, kit: SglangKit) -> PlatformCapabilities:
    """SGLang's capability flags from the contract: Triton where it launches, graphs where the kit captures them."""
    flags = {
        "supports_triton": accelerator.is_triton_supported(),
        "graph_capture": bool(kit.graph_runner) and Capability.GRAPHS in accelerator.capabilities,
    }
    known = set(PlatformCapabilities.__struct_fields__)
    return PlatformCapabilities(**{name: value for name, value in flags.items() if name in known})


def kit_for(backend: str) -> SglangKit:
    """The kit a plugin's ``accelhal_sglang_kit`` hook returns for ``backend``; :data:`PORTABLE` if none does."""
    return _engines.kit_for("accelhal_sglang_kit", backend, SglangKit, PORTABLE)


def build(accelerator: Accelerator, spec: BackendSpec, kit: SglangKit, lacking: frozenset[str]) -> type[SRTPlatform]:
    """SGLang's ``SRTPlatform`` for ``accelerator``: each member from the source ``MEMBERS`` names.

    ``lacking``: the members the installed release's ``SRTPlatform`` does not have (its row of ``SHAPES``).
    """
    data = {
        "_enum": PlatformEnum.OOT,
        "device_name": spec.name,
        "device_type": spec.device_type,
        "capabilities": capabilities(accelerator, kit),
    }
    namespace: dict[str, Any] = {"accelerator": accelerator, "spec": spec, "kit": kit, "__module__": __name__}
    for member, answer in MEMBERS.items():
        if answer.source == "sglang" or member in lacking:
            continue
        namespace[member] = data[member] if member in data else ContractAnswers.__dict__[member]
    name = "Accelhal" + "".join(part.capitalize() for part in spec.name.split("_")) + "Platform"
    namespace["__qualname__"] = name
    namespace["__doc__"] = f"SGLang's platform for accelhal's {spec.name!r} backend (built by accelhal.compat.sglang)."
    return type(name, (SRTPlatform,), namespace)


def _active() -> type[SRTPlatform]:
    accelerator = accelhal.get_accelerator()
    spec = registry().backends[accelerator.name].spec
    return build(accelerator, spec, kit_for(spec.name), SHAPES.shape_for(_RELEASE))


AccelhalPlatform = _active()
"""The platform SGLang instantiates: built once per process, for accelhal's active backend."""
