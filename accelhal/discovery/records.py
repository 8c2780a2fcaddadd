"""Plain records of what discovery and selection did.

They are cheap to build on the selection path; :mod:`accelhal.report` turns them into
the pydantic :class:`~accelhal.report.DetectionReport` when someone asks for it.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Literal

from accelhal.contract.spec import BackendSpec, Status
from accelhal.plain_record import field, record

if TYPE_CHECKING:
    from accelhal.process.torch_import import TorchDiagnosis


PluginState = Literal["loaded", "blocked", "not-allowed", "autoload-disabled", "deferred", "failed"]
"""What became of an entry point of the ``accelhal`` group (:attr:`PluginRecord.state`)."""
FailureStage = Literal["import", "register", "validate", "conflict", "probe", "instantiate", "op-builders"]
"""The step of a plugin that failed (:attr:`Failure.stage`)."""
DecisionRule = Literal["set_accelerator", "ACCELHAL_ACCELERATOR", "DS_ACCELERATOR", "priority", "fallback", "error"]
"""How the active backend was chosen (:attr:`Decision.rule`); ``error`` when selection failed."""

_DEVICE = r"(?:\d{1,6}(?:\.\d{1,6})?|(?:GPU|MIG)-[0-9A-Za-z-]{1,80}(?:/\d{1,6})*)"
_DEVICE_LIST = rf"\s*(?:-1|all|none|void|NoDevFiles|{_DEVICE}(?:\s*,\s*{_DEVICE}){{0,1023}})?\s*"
"""A visible-devices variable's value; compiled by :mod:`re` on first use (when a report is built), not at import."""
HIDDEN_VALUE = "(set, but not a device list: not shown)"
"""What a report shows for a visible-devices variable whose value is not a device list (a spec may name any
variable, ``HOME`` or a token's among them; reports are pasted into issues)."""


def is_device_list(value: str) -> bool:
    """Tell whether ``value`` is what a visible-devices variable holds.

    That is: indices (``0,1``, ``0.1``), ``GPU-``/``MIG-`` identifiers, ``-1``, ``all``, ``none``, ``void``,
    ``NoDevFiles``, or nothing.

    >>> is_device_list("0,1"), is_device_list("GPU-8a1b2c3d-0000-1111"), is_device_list("/home/me")
    (True, True, False)
    """
    return len(value) <= 4096 and re.fullmatch(_DEVICE_LIST, value) is not None


@record
class PluginRecord:
    """One entry point of the ``accelhal`` group and what became of it."""

    name: str
    """The entry-point name."""
    value: str
    """What the entry point names (``"module"`` or ``"module:attr"``)."""
    distribution: str
    distribution_version: str
    builtin: bool
    state: PluginState = "loaded"
    """What became of the entry point (:data:`PluginState`)."""
    detail: str = ""
    import_seconds: float | None = None
    """Wall time of importing the plugin and calling its registration hook; ``None`` when not imported."""
    output: str = ""
    """What importing the plugin wrote to standard output (it went to standard error)."""

    @property
    def source(self) -> str:
        """``"built-in"`` or ``"<distribution> <version>"``."""
        return "built-in" if self.builtin else f"{self.distribution} {self.distribution_version}"


@record
class Failure:
    """A plugin problem that was reported and skipped (or raised under strict mode)."""

    plugin: str
    stage: FailureStage
    """The step that failed (:data:`FailureStage`)."""
    detail: str
    backend: str | None = None
    hint: str | None = None
    """What to do about it, where accelhal knows better than "repair or block the plugin"."""


@record
class Registration:
    """A registered backend and the plugin that registered it."""

    spec: BackendSpec
    plugin: PluginRecord
    replaced: list[str] = field(default_factory=list)
    """Sources of the registrations this one replaced (``replaces=``)."""


@record
class CandidateRecord:
    """One backend as the selection saw it."""

    name: str
    device_type: str
    priority: int
    source: str
    plugin: str
    status: Status
    reason: str
    hint: str | None = None
    probe_seconds: float | None = None
    comm_backend: str = ""
    visible_devices_envs: tuple[str, ...] = ()
    import_output: str = ""
    """What probing and importing the backend wrote to standard output (it went to standard error)."""

    @classmethod
    def of(cls, registration: Registration, status: Status, reason: str, **seen: Any) -> CandidateRecord:
        """The record of ``registration``'s backend: its spec's identity, what was seen (``hint``, ...)."""
        spec = registration.spec
        return cls(
            name=spec.name,
            device_type=spec.device_type,
            priority=spec.priority,
            source=registration.plugin.source,
            plugin=registration.plugin.name,
            status=status,
            reason=reason,
            comm_backend=spec.comm_backend,
            visible_devices_envs=spec.visible_devices_envs,
            **seen,
        )


@record
class Decision:
    """The outcome of one selection: who won, by which rule, and everything seen on the way."""

    chosen: str | None
    rule: DecisionRule
    """How the backend was chosen (:data:`DecisionRule`)."""
    explanation: str
    candidates: list[CandidateRecord]
    plugins: list[PluginRecord]
    failures: list[Failure]
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ), compare=False, repr=False)
    """A copy of ``os.environ`` taken when the decision is made; :attr:`environment` is the part a report shows."""
    error: str | None = None
    seconds: float = 0.0
    torch: TorchDiagnosis | None = None
    """How ``import torch`` went, once the selection needed torch."""
    unprobed: list[tuple[Registration, CandidateRecord]] = field(default_factory=list, compare=False, repr=False)
    """Backends below the chosen one, not probed yet, with their placeholder records in ``candidates``:
    a report probes them (``accelhal.selection.detect``); the first ``get_accelerator()`` does not wait for them."""
    visible_devices_envs: tuple[str, ...] = ()
    """The visible-devices variables of every backend registered at the selection."""

    @property
    def environment(self) -> dict[str, str]:
        """What :data:`~accelhal.process.settings.RELEVANT_VARIABLES` and :attr:`visible_devices_envs` were set to.

        Read from :attr:`environ` when asked: the table of variables is not built on the
        first ``get_accelerator()``.
        """
        from accelhal.process.settings import RELEVANT_VARIABLES
        from accelhal.text import undecodable_escaped

        shown = {name: self.environ[name] for name in RELEVANT_VARIABLES if name in self.environ}
        for name in self.visible_devices_envs:  # any variable a spec names: only a device list's value is shown
            if name in self.environ and name not in shown:
                value = self.environ[name]
                shown[name] = value if is_device_list(value) else HIDDEN_VALUE
        return {name: undecodable_escaped(value) for name, value in sorted(shown.items())}
