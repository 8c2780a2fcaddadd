"""The JSON output of every ``accelhal`` subcommand, as pydantic models.

``accelhal <command> --json`` prints one of these; ``accelhal schema`` prints the JSON
Schema of each (see :data:`OUTPUT_MODELS`). ``info`` reuses
:class:`~accelhal.report.DetectionReport` and :class:`~accelhal.report.AcceleratorInfo`.

Example::

    >>> from accelhal.cli.models import DoctorOutput
    >>> DoctorOutput(healthy=True, active="cpu", problems=[], checks=["settings"]).model_dump_json()
    '{"healthy":true,"active":"cpu","problems":[],"checks":["settings"]}'
"""

from __future__ import annotations

import enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from accelhal.report import AcceleratorInfo, CandidateReport, DetectionReport, FailureReport, PluginReport


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InfoOutput(_Output):
    """``accelhal info --json``: how the active backend was chosen, and what it has."""

    detection: DetectionReport
    accelerator: AcceleratorInfo


class BackendEntry(CandidateReport):
    """One registered backend in ``accelhal list``: the selection's record, ranked."""

    rank: int = Field(description="1 for the backend probed first (highest priority)")
    active: bool
    description: str


class ListOutput(_Output):
    """``accelhal list --json``: every registered backend in priority order, and every plugin."""

    chosen: str | None = Field(description="the active backend, or null when selection failed")
    rule: str
    error: str | None = None
    backends: list[BackendEntry]
    plugins: list[PluginReport]
    failures: list[FailureReport]


class Outcome(str, enum.Enum):
    """Why a backend is, or is not, the active one (``accelhal explain``)."""

    ACTIVE = "active"
    NOT_INSTALLED = "not-installed"
    NO_DEVICE = "no-device"
    BROKEN = "broken"
    REPLACED = "replaced"
    PROBE_ERROR = "probe-error"
    INVALID = "invalid"
    BLOCKED = "blocked"
    PLUGIN_FAILED = "plugin-failed"
    LOWER_PRIORITY = "lower-priority"
    NOT_PROBED = "not-probed"
    SELECTION_FAILED = "selection-failed"
    UNKNOWN = "unknown"


class ExplainOutput(_Output):
    """``accelhal explain [NAME] --json``."""

    name: str | None = Field(
        description="the backend explained: NAME, else the active one (null when selection failed)"
    )
    active: str | None = Field(description="the active backend, or null when selection failed")
    outcome: Outcome
    summary: str = Field(description="one sentence: why")
    details: list[str] = Field(description="the evidence: probe reasons, rule, plugin state")
    hint: str | None = None
    known: list[str] = Field(description="registered backend names, in priority order")


class Problem(_Output):
    """One problem ``accelhal doctor`` found, and how to fix it."""

    code: str = Field(description="stable identifier, e.g. 'forced-unavailable'")
    title: str
    detail: str
    fix: str
    severity: Literal["error", "warning"] = Field(
        default="error", description="'warning': worth fixing, but nothing fails because of it (doctor still exits 0)"
    )


class DoctorOutput(_Output):
    """``accelhal doctor --json``: healthy (exit status 0) when no problem is an error; warnings may remain."""

    healthy: bool
    active: str | None
    problems: list[Problem]
    checks: list[str] = Field(description="the checks that ran")


class FailedTest(_Output):
    """One failed or erroring conformance test."""

    nodeid: str
    message: str


class CheckOutput(_Output):
    """``accelhal check --json``: the conformance suite's outcome for one backend."""

    backend: str
    exit_code: int = Field(description="pytest's exit status; 0 when every test passed or was skipped")
    passed: int
    failed: int
    skipped: int
    errors: int
    failures: list[FailedTest]


OUTPUT_MODELS: dict[str, type[BaseModel]] = {
    "info": InfoOutput,
    "list": ListOutput,
    "explain": ExplainOutput,
    "doctor": DoctorOutput,
    "check": CheckOutput,
}
"""Subcommand name -> the model its ``--json`` output conforms to."""
