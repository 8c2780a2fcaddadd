"""What a backend plugin registers (:class:`BackendSpec`) and what its probe says (:class:`Verdict`).

This module is imported while plugins are discovered, before any backend is chosen, so
it must stay cheap: it imports neither torch nor any vendor package. The accelerator
class itself is named by a lazy ``"module:Class"`` reference and imported only when its
backend is selected (the pattern of vLLM's platform plugins).

Example, the whole registration of a third-party backend::

    from accelhal import BackendSpec, Verdict, hookimpl

    def probe() -> Verdict:
        import my_runtime  # a cheap check: no device context may be created here
        n = my_runtime.device_count()
        return Verdict.available(f"{n} device(s)") if n else Verdict.no_device("no device visible")

    @hookimpl
    def accelhal_register_backends(register):
        register(BackendSpec(
            name="mydev", device_type="mydev", priority=250,
            accelerator="my_pkg.accel:MyAccelerator", probe=probe,
            requires=("my_runtime",), comm_backend="gloo",
        ))
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from accelhal._record import field, record

if TYPE_CHECKING:
    from accelhal.contract import Accelerator

CONTRACT_VERSION = 1
"""The version of the :class:`accelhal.Accelerator` contract this accelhal implements.

A backend declares the version it was written for in :attr:`BackendSpec.contract_version`.
Members added in a later version always come with a default, so a backend written for
an older version keeps working; a backend declaring a *newer* version than this accelhal
knows is rejected with a clear reason (it may rely on members this accelhal lacks).
"""

SUPPORTED_CONTRACT_VERSIONS: tuple[int, ...] = (1,)
"""Every contract version a backend may declare with this accelhal."""

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""A backend name: a lowercase letter, then up to 31 lowercase letters, digits or ``_``."""


class Status(str, enum.Enum):
    """The outcome of probing one backend, or why it was never probed."""

    AVAILABLE = "available"
    """The runtime is installed and sees at least one device."""
    NOT_INSTALLED = "not-installed"
    """A required module is missing (found with ``importlib.util.find_spec``, nothing imported)."""
    NO_DEVICE = "no-device"
    """The runtime imports but sees no device."""
    BROKEN = "broken"
    """The runtime is installed but fails to load (e.g. ``torch_npu`` without the Ascend libraries)."""
    PROBE_ERROR = "probe-error"
    """The probe itself raised; the exception is in the reason."""
    INVALID = "invalid"
    """The backend's accelerator class failed validation (missing members, bad contract version)."""
    NOT_PROBED = "not-probed"
    """Selection was decided without probing this backend (an override named another)."""


class Capability(str, enum.Enum):
    """Optional features an accelerator declares in :attr:`Accelerator.capabilities`.

    The conformance kit skips the tests of a capability a backend declares absent, and
    ``accelhal info`` shows them.
    """

    STREAMS = "streams"
    """User-created streams (``Stream`` is a class, ``stream(s)`` switches to it)."""
    EVENTS = "events"
    """``Event`` is a class whose instances can be recorded and synchronised."""
    EVENT_TIMING = "event-timing"
    """``Event(enable_timing=True)`` measures elapsed device time."""
    GRAPHS = "graphs"
    """``create_graph``/``capture_to_graph``/``replay_graph`` capture and replay work."""
    PINNING = "pinning"
    """``pin_memory`` page-locks host memory for this device."""
    HOST_REGISTRATION = "host-registration"
    """``register_host_memory`` registers existing host memory with the runtime."""
    RANGES = "ranges"
    """``range_push``/``range_pop`` open profiler ranges (NVTX and the like)."""
    DEVICE_MEMORY_STATS = "device-memory-stats"
    """Memory figures come from a device allocator and move with tensor allocations."""


@record(frozen=True)
class Verdict:
    """What a probe found: a :class:`Status`, a human-readable reason and an optional hint.

    Build one with the named constructors::

        Verdict.available("2 device(s) visible")
        Verdict.no_device("torch.cuda.device_count() == 0")
        Verdict.broken("import torch_npu failed: ImportError: libhccl.so", hint="source set_env.sh")
    """

    status: Status
    reason: str
    hint: str | None = None

    @property
    def is_available(self) -> bool:
        """True when the backend can be used."""
        return self.status is Status.AVAILABLE

    @classmethod
    def available(cls, reason: str = "available") -> Verdict:
        """The backend can be used."""
        return cls(Status.AVAILABLE, reason)

    @classmethod
    def not_installed(cls, reason: str, hint: str | None = None) -> Verdict:
        """A required module is missing."""
        return cls(Status.NOT_INSTALLED, reason, hint)

    @classmethod
    def no_device(cls, reason: str, hint: str | None = None) -> Verdict:
        """The runtime loads but sees no device."""
        return cls(Status.NO_DEVICE, reason, hint)

    @classmethod
    def broken(cls, reason: str, hint: str | None = None) -> Verdict:
        """The runtime is installed but fails to load."""
        return cls(Status.BROKEN, reason, hint)


Probe = Callable[[], Verdict]
"""A zero-argument callable that says whether a backend is usable here.

A probe must be cheap and honest: check for modules with ``importlib.util.find_spec``
before importing them, answer "no device" when the runtime imports but sees none, and
never create a device context (after probing, a process can still fork and use the
device in the child). An exception escaping a probe is caught by the selection and
reported as :attr:`Status.PROBE_ERROR`; it never crashes selection.
"""


@record(frozen=True)
class BackendSpec:
    """One backend, as a plugin registers it through ``accelhal_register_backends``.

    Attributes:
        name: the backend's name (``ACCELHAL_ACCELERATOR=<name>``); see :data:`NAME_PATTERN`.
        device_type: the ``torch.device`` type string of its tensors (``"cuda"``, ``"npu"``).
        priority: higher is probed first; built-ins span 100 (cpu) to 900 (xpu).
        accelerator: the :class:`accelhal.Accelerator` subclass, or a lazy
            ``"module:Class"`` reference imported only when this backend is chosen.
        probe: see :data:`Probe`.
        requires: top-level modules that must be installed; checked with
            ``importlib.util.find_spec`` before the probe runs.
        comm_backend: the ``torch.distributed`` backend name (``"nccl"``, ``"hccl"``, ``"gloo"``).
        visible_devices_envs: the variables that restrict which devices a process sees.
        replaces: the name of a registered backend this one deliberately takes over.
            Registering a taken name without it is a conflict: the first registration wins.
        contract_version: the :data:`CONTRACT_VERSION` the backend was written for.
        description: one line for ``accelhal list``.
        generic: a backend offered for a device type no other backend claims (the
            generic backend over ``torch.accelerator``); any other registration of the
            same name or device type takes precedence over it, and it stands aside.
    """

    name: str
    device_type: str
    priority: int
    accelerator: str | type[Accelerator]
    probe: Probe
    requires: tuple[str, ...] = ()
    comm_backend: str = "gloo"
    visible_devices_envs: tuple[str, ...] = ()
    replaces: str | None = None
    contract_version: int = CONTRACT_VERSION
    description: str = ""
    generic: bool = False
    _class_cache: list[type[Accelerator]] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise ValueError(f"invalid BackendSpec {self.name!r}: " + "; ".join(problems))

    def _problems(self) -> list[str]:
        problems: list[str] = []
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            problems.append(
                f"name must match {NAME_PATTERN.pattern} (lowercase letters, digits, '_'), got {self.name!r}"
            )
        if not isinstance(self.device_type, str) or not self.device_type.isidentifier():
            problems.append(f"device_type must be a torch device type such as 'cuda', got {self.device_type!r}")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            problems.append(f"priority must be an int, got {self.priority!r}")
        if isinstance(self.accelerator, str):
            if self.accelerator.count(":") != 1 or not all(self.accelerator.split(":")):
                problems.append(f"accelerator must be 'module:Class', got {self.accelerator!r}")
        elif not isinstance(self.accelerator, type):
            problems.append(f"accelerator must be a class or a 'module:Class' string, got {self.accelerator!r}")
        if not callable(self.probe):
            problems.append(f"probe must be callable, got {self.probe!r}")
        if isinstance(self.requires, str) or not all(isinstance(m, str) and m for m in self.requires):
            problems.append(f"requires must be a tuple of module names, got {self.requires!r}")
        if isinstance(self.visible_devices_envs, str):
            problems.append("visible_devices_envs must be a tuple of variable names, not a string")
        if self.replaces is not None and not NAME_PATTERN.fullmatch(str(self.replaces)):
            problems.append(f"replaces must be a backend name, got {self.replaces!r}")
        if isinstance(self.contract_version, bool) or not isinstance(self.contract_version, int):
            problems.append(f"contract_version must be an int, got {self.contract_version!r}")
        if not isinstance(self.generic, bool):
            problems.append(f"generic must be a bool, got {self.generic!r}")
        return problems

    @property
    def accelerator_path(self) -> str:
        """The accelerator class as ``"module:Class"``, whether given lazily or not."""
        if isinstance(self.accelerator, str):
            return self.accelerator
        return f"{self.accelerator.__module__}:{self.accelerator.__qualname__}"

    def load_class(self) -> type[Accelerator]:
        """Import (once) and return the accelerator class; errors propagate to the caller."""
        if self._class_cache:
            return self._class_cache[0]
        if isinstance(self.accelerator, str):
            module_name, _, qualname = self.accelerator.partition(":")
            obj: object = importlib.import_module(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            if not isinstance(obj, type):
                raise TypeError(f"{self.accelerator} is {obj!r}, not a class")
            cls: type[Accelerator] = obj
        else:
            cls = self.accelerator
        self._class_cache.append(cls)
        return cls
