"""Declare what a backend plugin registers: :class:`BackendSpec`, its :class:`Capability` flags, the contract version.

Imported while plugins are discovered, before any backend is chosen: it imports neither torch
nor a vendor package, and a spec names its accelerator class as ``"module:Class"``, imported only
when its backend is selected. A whole registration, probe included, is in ``docs/plugins.md``.
"""

from __future__ import annotations

import enum
import importlib
import re
from typing import TYPE_CHECKING, Any

from accelhal.contract.probes import device_module_probe
from accelhal.contract.verdict import Probe, Status, Verdict
from accelhal.plain_record import field, record
from accelhal.text import quote

__all__ = [
    "CONTRACT_VERSION",
    "NAME_PATTERN",  # noqa: F822 (compiled on first use: see __getattr__)
    "NAME_SYNTAX",
    "SUPPORTED_CONTRACT_VERSIONS",
    "BackendSpec",
    "Capability",
    "Probe",
    "Status",
    "Verdict",
    "is_backend_name",
]

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator

CONTRACT_VERSION = 1
"""The version of the :class:`accelhal.Accelerator` contract this accelhal implements.

A backend declares the version it was written for in :attr:`BackendSpec.contract_version`.
Members added in a later version always come with a default, so a backend written for
an older version keeps working; a backend declaring a *newer* version than this accelhal
knows is rejected with a clear reason (it may rely on members this accelhal lacks).
"""

SUPPORTED_CONTRACT_VERSIONS: tuple[int, ...] = (1,)
"""Every contract version a backend may declare with this accelhal."""


def contract_version_hint(version: object, source: str) -> str | None:
    """Return what to upgrade when a backend from ``source`` declares contract ``version``; ``None`` if supported.

    A version newer than this accelhal knows asks for a newer accelhal; an older one that
    this accelhal no longer supports asks for a newer plugin.

    >>> contract_version_hint(CONTRACT_VERSION + 1, "acme-accel 2.0")
    'upgrade accelhal: acme-accel 2.0 was written for contract version 2, newer than this accelhal knows (1)'
    """
    if version in SUPPORTED_CONTRACT_VERSIONS:
        return None
    if isinstance(version, int) and not isinstance(version, bool) and version > max(SUPPORTED_CONTRACT_VERSIONS):
        return (
            f"upgrade accelhal: {source} was written for contract version {version}, newer than this accelhal "
            f"knows ({max(SUPPORTED_CONTRACT_VERSIONS)})"
        )
    if isinstance(version, int) and not isinstance(version, bool):
        return (
            f"upgrade {source}: it was written for contract version {version}, which this accelhal no longer "
            f"supports ({', '.join(map(str, SUPPORTED_CONTRACT_VERSIONS))})"
        )
    return f"ask the maintainers of {source} to declare an int contract_version (accelhal.CONTRACT_VERSION)"


PRIORITY_LIMIT = 1_000_000
"""The largest priority either way (the built-ins' are in the hundreds): beyond it an int orders nothing more, and
one of 4,301 digits would stop every report that prints it."""

MAX_DEVICES = 65_536
"""The most devices :meth:`~accelhal.Accelerator.device_count` may claim; more is an impossible answer (a C count of
-1 read as unsigned is 4,294,967,295), which describing the devices one by one would take hours to show."""

DEVICES_ASKED = 64
"""The most devices whose answers are checked one by one (``accelhal doctor``, ``info``'s faults, the conformance
kit): a runtime may claim any number up to :data:`MAX_DEVICES`."""

NAME_SYNTAX = "[a-z][a-z0-9_]{0,31}"
"""A backend name: a lowercase letter, then up to 31 lowercase letters, digits or ``_`` (as a regular expression)."""
_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz")
_NAME_REST = _NAME_FIRST | frozenset("0123456789_")


def is_backend_name(value: object) -> bool:
    """Return whether ``value`` is a string that matches :data:`NAME_SYNTAX` whole (without compiling it).

    >>> is_backend_name("npu"), is_backend_name("Npu"), is_backend_name("2x")
    (True, False, False)
    """
    return isinstance(value, str) and 0 < len(value) <= 32 and value[0] in _NAME_FIRST and _NAME_REST.issuperset(value)


def __getattr__(name: str) -> Any:
    """Return ``NAME_PATTERN``, :data:`NAME_SYNTAX` compiled on first use."""
    if name == "NAME_PATTERN":
        pattern = re.compile(NAME_SYNTAX)
        globals()[name] = pattern
        return pattern
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


_SPEC_HINTED = frozenset({Status.NOT_INSTALLED, Status.NO_DEVICE, Status.BROKEN, Status.PROBE_ERROR})
"""The verdicts whose hint defaults to the spec's: the backend is missing, sees no device, or fails."""


@record(frozen=True)
class BackendSpec:
    """One backend, as a plugin registers it through ``accelhal_register_backends``.

    Attributes:
        name: the backend's name (``ACCELHAL_ACCELERATOR=<name>``); see :data:`NAME_SYNTAX`.
        device_type: the ``torch.device`` type string of its tensors (``"cuda"``, ``"npu"``).
        priority: higher is probed first, at most ``PRIORITY_LIMIT`` either way (the built-ins' priorities:
            ``docs/reference/priorities.md``).
        accelerator: the :class:`accelhal.Accelerator` subclass, or a lazy
            ``"module:Class"`` reference imported only when this backend is chosen.
        probe: see :data:`~accelhal.contract.verdict.Probe`.
        requires: top-level modules that must be installed; checked with
            ``importlib.util.find_spec`` before the probe runs.
        comm_backend: the ``torch.distributed`` backend name (``"nccl"``, ``"hccl"``, ``"gloo"``).
        visible_devices_envs: the variables that restrict which devices a process sees.
        package: the package imported first, which registers the device module
            (``"torch_npu"``; ``"torch"`` for torch's own modules); device-module backends only.
        module: the dotted device module (``"torch.npu"``); device-module backends only.
        hint: what to do when the backend is missing, broken, sees no device or its probe
            raised (one sentence; e.g. which toolkit to install and which environment script
            to source): the hint of every such verdict that brings none of its own
            (:meth:`verdict_hint`).
        device_check_command: the vendor's own command that lists the devices its driver
            sees (``"npu-smi info"``, ``"nvidia-smi"``): the hint of a ``no-device`` verdict,
            and the command ``accelhal doctor``'s ``no-device`` notice says to run.
        export_envs: prefixes of the variables a multi-node launcher forwards to remote ranks.
        replaces: the name of a registered backend this one deliberately takes over.
            Registering a taken name without it is a conflict: the first registration wins.
        contract_version: the :data:`CONTRACT_VERSION` the backend was written for.
        description: one line for ``accelhal list``.
        generic: a backend offered for a device type no other backend claims (the
            generic backend over ``torch.accelerator``); any other registration of the
            same name or device type takes precedence over it, and it stands aside.
        compile_backend: the ``torch.compile`` backend the vendor registers with
            ``torch._dynamo`` for this device (``"hpu_backend"``), which
            :meth:`~accelhal.Accelerator.get_compile_backend` then answers; empty (the
            default) lets accelhal choose: ``"inductor"`` where Inductor generates code for
            the device type, else ``"aot_eager"`` (:mod:`accelhal.contract.compile_backend`).
    """

    name: str
    device_type: str
    priority: int
    accelerator: str | type[Accelerator]
    probe: Probe
    requires: tuple[str, ...] = ()
    comm_backend: str = "gloo"
    visible_devices_envs: tuple[str, ...] = ()
    package: str | None = None
    module: str | None = None
    hint: str = ""
    device_check_command: str = ""
    export_envs: tuple[str, ...] = ()
    replaces: str | None = None
    contract_version: int = CONTRACT_VERSION
    description: str = ""
    generic: bool = False
    compile_backend: str = ""
    _class_cache: list[type[Accelerator]] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("requires", "visible_devices_envs", "export_envs"):  # a list is taken as the tuple it means
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        problems = list(self._problems())
        if problems:
            raise ValueError(f"invalid BackendSpec {self.name!r}: " + "; ".join(problems))

    def _problems(self) -> list[str]:
        problems: list[str] = []
        if not is_backend_name(self.name):
            problems.append(f"name must match {NAME_SYNTAX} (lowercase letters, digits, '_'), got {self.name!r}")
        if not isinstance(self.device_type, str) or not self.device_type.isidentifier():
            problems.append(f"device_type must be a torch device type such as 'cuda', got {self.device_type!r}")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            problems.append(f"priority must be an int, got {quote(self.priority)}")
        elif not -PRIORITY_LIMIT <= self.priority <= PRIORITY_LIMIT:
            bounds = f"between -{PRIORITY_LIMIT} and {PRIORITY_LIMIT}"
            problems.append(f"priority must be an int {bounds}, got {quote(self.priority)}")
        if isinstance(self.accelerator, str):
            if self.accelerator.count(":") != 1 or not all(self.accelerator.split(":")):
                problems.append(f"accelerator must be 'module:Class', got {self.accelerator!r}")
        elif not isinstance(self.accelerator, type):
            problems.append(f"accelerator must be a class or a 'module:Class' string, got {self.accelerator!r}")
        if not callable(self.probe):
            problems.append(f"probe must be callable, got {self.probe!r}")
        if isinstance(self.requires, str) or not all(isinstance(m, str) and m for m in self.requires):
            problems.append(f"requires must be a tuple of module names, got {self.requires!r}")
        for name in ("visible_devices_envs", "export_envs"):
            names = getattr(self, name)
            if isinstance(names, str):
                problems.append(f"{name} must be a tuple of variable names, not a string")
            elif not isinstance(names, tuple) or not all(isinstance(n, str) and n for n in names):
                problems.append(f"{name} must be a tuple of variable names, got {quote(names)}")
        if not isinstance(self.comm_backend, str):  # '' where none is known (the generic backend's new devices)
            problems.append(
                f"comm_backend must be a torch.distributed backend name such as 'nccl' or 'gloo', "
                f"got {quote(self.comm_backend)}"
            )
        for name in ("hint", "device_check_command", "description"):
            if not isinstance(getattr(self, name), str):
                problems.append(f"{name} must be a string, got {quote(getattr(self, name))}")
        for name in ("package", "module"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                problems.append(f"{name} must be a module name or None, got {quote(getattr(self, name))}")
        if self.replaces is not None and not is_backend_name(str(self.replaces)):
            problems.append(f"replaces must be a backend name, got {self.replaces!r}")
        if isinstance(self.contract_version, bool) or not isinstance(self.contract_version, int):
            problems.append(f"contract_version must be an int, got {self.contract_version!r}")
        if not isinstance(self.generic, bool):
            problems.append(f"generic must be a bool, got {self.generic!r}")
        if not isinstance(self.compile_backend, str) or self.compile_backend != self.compile_backend.strip():
            problems.append(f"compile_backend must be a torch.compile backend name or '', got {self.compile_backend!r}")
        return problems

    def verdict_hint(self, verdict: Verdict) -> str | None:
        """Return what to do about ``verdict`` of this backend: its own hint, else the spec's.

        A ``no-device`` verdict without a hint of its own gets the driver's device listing
        (:attr:`device_check_command`) before :attr:`hint`; ``not-installed``, ``broken`` and
        ``probe-error`` get :attr:`hint`. Other verdicts keep their own (``None`` if they have none).

        >>> spec = BackendSpec(name="acme", device_type="cpu", priority=1, accelerator="m:C",
        ...                    probe=Verdict.available, hint="install the acme toolkit")
        >>> spec.verdict_hint(Verdict(Status.PROBE_ERROR, "the probe raised RuntimeError: boom"))
        'install the acme toolkit'
        """
        if verdict.hint:
            return verdict.hint
        if verdict.status is Status.NO_DEVICE and self.device_check_command:
            return f"check which devices the driver sees: {self.device_check_command}"
        return (self.hint or None) if verdict.status in _SPEC_HINTED else None

    @classmethod
    def for_device_module(
        cls,
        name: str,
        *,
        priority: int,
        package: str = "torch",
        module: str | None = None,
        device_type: str | None = None,
        accelerator: str | type[Accelerator] = "accelhal.contract.device_module:DeviceModuleAccelerator",
        count: str = "device_count",
        **fields: Any,
    ) -> BackendSpec:
        """Declare a backend over a torch.cuda-shaped device module, in one call.

        ``module`` defaults to ``torch.<name>``, or to ``package`` itself where that is dotted
        (``habana_frameworks.torch.hpu``). The probe counts devices with ``<module>.<count>()``
        after importing ``package``;
        the accelerator class defaults to :class:`~accelhal.contract.device_module.DeviceModuleAccelerator`
        bound to this spec (a subclass is needed only where behaviour differs). A ``probe``
        given in ``fields`` replaces the counting probe. Other
        ``fields`` are :class:`BackendSpec`'s (``comm_backend``, ``visible_devices_envs``, ``hint``, ...).

        >>> spec = BackendSpec.for_device_module("mydev", priority=250, package="torch_mydev")
        >>> spec.module, spec.requires
        ('torch.mydev', ('torch', 'torch_mydev'))
        """
        module = module or (package if "." in package else f"torch.{name}")
        hint = str(fields.get("hint", ""))
        probe = fields.pop("probe", None) or device_module_probe(package, module, hint, count)
        requires = tuple(dict.fromkeys(("torch", package.partition(".")[0])))
        return cls(
            name=name,
            device_type=device_type or name,
            priority=priority,
            accelerator=accelerator,
            probe=probe,
            requires=requires,
            package=package,
            module=module,
            **fields,
        )

    @property
    def accelerator_path(self) -> str:
        """The accelerator class as ``"module:Class"``, whether given lazily or not."""
        if isinstance(self.accelerator, str):
            return self.accelerator
        return f"{self.accelerator.__module__}:{self.accelerator.__qualname__}"

    def load_class(self) -> type[Accelerator]:
        """Import (once) and return the accelerator class; errors propagate to the caller.

        A class that declares no identity of its own (no ``spec``, no ``_name``, such as
        :class:`~accelhal.contract.device_module.DeviceModuleAccelerator` itself) is bound to this
        spec: the result is a subclass of it whose ``spec`` is this one.
        """
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
        if getattr(cls, "spec", None) is None and not getattr(cls, "_name", ""):
            cls = type(f"{self.name.capitalize()}Accelerator", (cls,), {"spec": self, "__module__": cls.__module__})
        self._class_cache.append(cls)
        return cls
