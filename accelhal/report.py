"""JSON-serialisable reports: :class:`DetectionReport` and :class:`AcceleratorInfo` (pydantic).

Built on demand from the plain records of :mod:`accelhal.discovery.records`, so that selection
itself never imports pydantic. ``accelhal schema`` prints their JSON Schema.

Example::

    >>> report = accelhal.detect()
    >>> report.chosen, report.rule
    ('cpu', 'fallback')
    >>> print(report.model_dump_json(indent=2))      # what to paste into a bug report
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from accelhal._version import __version__
from accelhal.contract.spec import CONTRACT_VERSION, Status
from accelhal.discovery.records import DecisionRule, FailureStage, PluginState

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.discovery.records import Decision


def _unreadable_metadata(exc: UnicodeDecodeError) -> Exception:
    """Return the :class:`~accelhal.errors.MetadataError` for pydantic's plugin loader failing with ``exc``.

    pydantic lists every installed distribution's entry points when the first model is defined, and
    ``importlib.metadata`` raises on an ``entry_points.txt`` that is not UTF-8.
    """
    from accelhal.errors import MetadataError
    from accelhal.process.undecodable_metadata import UndecodableFile, undecodable_file

    found = undecodable_file(exc) or UndecodableFile.at(None)
    commands = found.pip_commands
    repair = f" ({commands[0]}, or {commands[1]})" if commands else ""
    return MetadataError(
        f"pydantic, which accelhal's reports use, cannot load its plugins: it reads the entry points of every "
        f"installed distribution, and {found.where} is not UTF-8 ({type(exc).__name__}: {exc}); repair or remove "
        f"{found.subject}{repair}, or set PYDANTIC_DISABLE_PLUGINS=__all__ (pydantic's switch that loads no plugin)",
        file=found.path,
    )


try:  # the first pydantic model: pydantic's plugin loader reads every distribution's entry points here

    class _Model(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid", from_attributes=True)

except UnicodeDecodeError as exc:
    raise _unreadable_metadata(exc) from exc


class CandidateReport(_Model):
    """One backend as the selection saw it."""

    name: str
    device_type: str
    priority: int
    source: str = Field(description="'built-in' or '<distribution> <version>'")
    plugin: str = Field(description="the entry-point name that registered it")
    status: Status
    reason: str
    hint: str | None = None
    probe_seconds: float | None = Field(None, description="wall time of the probe; null when not probed")
    comm_backend: str
    visible_devices_envs: list[str]
    import_output: str = Field(
        default="", description="what probing and importing the backend wrote to stdout (it was sent to stderr)"
    )


class PluginReport(_Model):
    """One entry point of the ``accelhal`` group."""

    name: str
    value: str
    distribution: str
    distribution_version: str
    builtin: bool
    state: PluginState = Field(description="what became of the entry point")
    detail: str
    import_seconds: float | None = Field(
        None, description="wall time of importing the plugin and calling its hook; null when not imported"
    )
    output: str = Field(default="", description="what importing the plugin wrote to stdout (it was sent to stderr)")


class FailureReport(_Model):
    """A plugin problem that was reported and skipped."""

    plugin: str
    stage: FailureStage = Field(description="the step of the plugin that failed")
    detail: str
    backend: str | None = None
    hint: str | None = Field(default=None, description="what to do, where it is more than repairing or blocking it")


class AutoloadFailureReport(_Model):
    """The ``torch.backends`` entry point whose loading made ``import torch`` fail (torch's backend autoload)."""

    entry_point: str = Field(description="its name, e.g. 'torch_npu'")
    value: str = Field(description="what it points at, e.g. 'torch_npu:_autoload'")
    distribution: str
    version: str
    error: str = Field(description="its own error, first line")


class TorchImportReport(_Model):
    """How ``import torch`` went in this process (accelhal imports it once)."""

    loaded: bool
    error: str | None = Field(default=None, description="the exception's first line; null when torch loaded")
    cause: str | None = Field(default=None, description="the first line of its cause")
    autoload: AutoloadFailureReport | None = Field(
        default=None, description="set when torch's backend autoload was the culprit"
    )
    reason: str | None = Field(default=None, description="the verdict every backend requiring torch got")
    fixes: list[str] = Field(default_factory=list, description="what to do, best first")
    output: str = Field(default="", description="what the import wrote to stdout (it was sent to stderr)")


class DetectionReport(_Model):
    """Why the active backend was chosen, and what every other candidate said."""

    chosen: str | None = Field(description="the active backend, or null when selection failed")
    rule: DecisionRule = Field(description="how the active backend was chosen; error when selection failed")
    explanation: str
    error: str | None = None
    candidates: list[CandidateReport]
    plugins: list[PluginReport]
    failures: list[FailureReport]
    environment: dict[str, str]
    seconds: float = Field(description="time the selection took")
    torch: TorchImportReport | None = Field(
        default=None, description="how 'import torch' went; null before it was needed"
    )
    accelhal_version: str = __version__
    python_version: str = platform.python_version()

    @classmethod
    def from_decision(cls, decision: Decision) -> DetectionReport:
        """Convert the selection's plain record (its dataclasses map field by field)."""
        return cls.model_validate(decision, from_attributes=True)

    def candidate(self, name: str) -> CandidateReport | None:
        """The record of backend ``name``, if it was a candidate."""
        return next((c for c in self.candidates if c.name == name), None)


class DeviceInfo(_Model):
    """One device of the active backend."""

    index: int
    name: str = Field(description="the device string, e.g. 'cuda:0'")
    description: str = Field(description="the product name where the runtime has one")
    total_memory: int | None = Field(description="bytes; null where the runtime cannot say (NotImplementedError)")
    available_memory: int | None = Field(description="bytes; null where the runtime cannot say")
    capability: str | None = None


class AcceleratorInfo(_Model):
    """What :meth:`accelhal.Accelerator.info` says about an accelerator."""

    name: str
    device_type: str
    accelerator_class: str
    contract_version: int
    available: bool
    device_count: int
    devices: list[DeviceInfo]
    dtypes: list[str]
    comm_backend: str
    capabilities: list[str]
    streams: bool
    events: bool
    graphs: bool
    visible_devices_envs: list[str]
    compile_backend: str = Field(description="what get_compile_backend() answers: the torch.compile backend to use")
    compile_backend_reason: str = Field(description="why that backend (compile_backend_choice().reason)")
    compile_backend_source: str = Field(
        description="set, vendor, inductor or fallback (compile_backend_choice().source)"
    )
    torch_version: str
    accelhal_version: str = __version__
    accelhal_contract_version: int = CONTRACT_VERSION
    python_version: str = platform.python_version()
    platform: str = sys.platform
    vendor_versions: dict[str, str]


def _figure(member: Callable[[int], int], index: int) -> int | None:
    """``member(index)`` as an int, or ``None`` where the backend has no such figure (``NotImplementedError``)."""
    try:
        return int(member(index))
    except NotImplementedError:
        return None


def describe_accelerator(acc: Accelerator) -> AcceleratorInfo:
    """Build :class:`AcceleratorInfo` for ``acc``; may initialise the device runtime.

    Raises ``ValueError`` where ``device_count()`` claims more than
    ``accelhal.contract.spec.MAX_DEVICES`` devices.
    """
    import torch

    from accelhal.contract.spec import MAX_DEVICES, Capability

    available = bool(acc.is_available())
    count = acc.device_count() if available else 0
    if count > MAX_DEVICES:
        raise ValueError(f"device_count() answered {count:,}, more devices than any machine holds ({MAX_DEVICES:,})")
    devices = [
        DeviceInfo(
            index=i,
            name=acc.device_name(i),
            description=acc.device_description(i),
            total_memory=_figure(acc.total_memory, i),
            available_memory=_figure(acc.available_memory, i),
            capability=acc.device_capability(i),
        )
        for i in range(count)
    ]
    compile_choice = acc.compile_backend_choice()
    return AcceleratorInfo(
        name=acc.name,
        device_type=acc.device_type,
        accelerator_class=f"{type(acc).__module__}.{type(acc).__qualname__}",
        contract_version=acc.contract_version,
        available=available,
        device_count=count,
        devices=devices,
        dtypes=[str(d).removeprefix("torch.") for d in acc.supported_dtypes()],
        comm_backend=acc.communication_backend_name(),
        capabilities=sorted(c.value for c in acc.capabilities),
        streams=Capability.STREAMS in acc.capabilities,
        events=Capability.EVENTS in acc.capabilities,
        graphs=Capability.GRAPHS in acc.capabilities,
        visible_devices_envs=acc.visible_devices_envs(),
        compile_backend=compile_choice.backend,
        compile_backend_reason=compile_choice.reason,
        compile_backend_source=compile_choice.source,
        torch_version=torch.__version__,
        vendor_versions=acc.vendor_versions(),
    )
