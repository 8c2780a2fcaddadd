"""The JSON output of every ``accelhal`` subcommand, as pydantic models.

``accelhal <command> --json`` prints one of these; ``accelhal schema`` prints the JSON
Schema of each (see :data:`OUTPUT_MODELS`). ``info`` reuses
:class:`~accelhal.report.DetectionReport` and :class:`~accelhal.report.AcceleratorInfo`.

Example::

    >>> from accelhal.cli.output.models import DoctorOutput
    >>> DoctorOutput(healthy=True, active="cpu", problems=[], checks=["settings"]).model_dump_json()
    '{"healthy":true,"active":"cpu","problems":[],"checks":["settings"]}'
"""

from __future__ import annotations

import enum

from pydantic import BaseModel, ConfigDict, Field

from accelhal.discovery.records import DecisionRule
from accelhal.report import (
    AcceleratorInfo,
    CandidateReport,
    DetectionReport,
    FailureReport,
    PluginReport,
    TorchImportReport,
)


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VllmPlatformReport(_Output):
    """Where vLLM is installed: the platform vLLM would run on here, and the vLLM bridge's decision."""

    platform: str = Field(description="the qualified name vLLM's own resolution gives, or why it fails")
    bridge: str = Field(description="whether accelhal's vLLM platform answers here, and why (docs/vllm.md)")


class SglangPlatformReport(VllmPlatformReport):
    """Where SGLang is installed: the platform SGLang would run on here, and the SGLang bridge's decision."""

    platform: str = Field(
        description="the qualified name of the platform SGLang's own resolution gives, or why it fails"
    )
    bridge: str = Field(description="whether accelhal's SGLang platform answers here, and why (docs/sglang.md)")


class InfoOutput(_Output):
    """``accelhal info --json``: how the active backend was chosen, and what it has.

    When selection fails, ``accelerator`` is null and ``error`` says why (exit status 2); also
    when the active backend's runtime raised while it was described (exit status 1).
    """

    detection: DetectionReport
    accelerator: AcceleratorInfo | None
    error: str | None = Field(
        default=None,
        description="why no backend could be selected, or what the active backend raised when described; "
        "null on success",
    )
    plugin_problems: list[FailureReport] = Field(
        default_factory=list,
        description="every plugin failure (the detection's failures), then a failure of stage 'probe' for each "
        "backend whose probe raised or whose runtime is broken: what the 'plugin problems' line shows",
    )
    held_back: list[PluginReport] = Field(
        default_factory=list,
        description="every plugin a variable kept from loading (state blocked, not-allowed, autoload-disabled or "
        "deferred; the detail names the variable): what the 'plugins held back' line shows",
    )
    vllm: VllmPlatformReport | None = Field(
        default=None, description="null where vLLM is not installed; else the 'vllm platform' line"
    )
    sglang: SglangPlatformReport | None = Field(
        default=None, description="null where SGLang is not installed; else the 'sglang platform' line"
    )


class BackendEntry(CandidateReport):
    """One registered backend in ``accelhal list``: the selection's record, ranked."""

    rank: int = Field(description="1 for the backend probed first (highest priority)")
    active: bool
    description: str = Field(description="the spec's one line on the backend, shown above the reason in the table")


class ListOutput(_Output):
    """``accelhal list --json``: every registered backend in priority order, and every plugin."""

    chosen: str | None = Field(description="the active backend, or null when selection failed")
    rule: DecisionRule
    error: str | None = None
    backends: list[BackendEntry]
    plugins: list[PluginReport]
    failures: list[FailureReport]
    torch: TorchImportReport | None = Field(default=None, description="how 'import torch' went (the selection's)")


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
    AMBIGUOUS = "ambiguous"
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
    known: list[str] = Field(
        description="the names that may be asked for: the registered backends in priority order, then 'generic'"
    )
    torch: TorchImportReport | None = Field(default=None, description="how 'import torch' went (the selection's)")
    alias: str | None = Field(
        default=None,
        description="'generic' where NAME was taken as the alias of the backend of the device torch.accelerator "
        "reports: name is then that backend, or 'generic' where none is left to it (the summary says why); "
        "else null",
    )


class Severity(str, enum.Enum):
    """How much a doctor finding matters."""

    ERROR = "error"
    """Something is wrong, and ``accelhal doctor`` exits with status 1."""
    WARNING = "warning"
    """Worth fixing, but nothing fails because of it (a slow plugin); the exit status stays 0."""
    NOTICE = "notice"
    """Worth knowing, nothing broken (a runtime that loads but sees no device); the exit status stays 0."""


class Problem(_Output):
    """One finding of ``accelhal doctor``, and what to do about it."""

    code: str = Field(description="stable identifier, e.g. 'forced-unavailable'")
    severity: Severity = Field(
        default=Severity.ERROR, description="'error' makes doctor exit 1; 'warning' and 'notice' leave it healthy"
    )
    title: str
    detail: str
    fix: str


class DoctorOutput(_Output):
    """``accelhal doctor --json``: healthy when no finding is an error (exit status 0); warnings, notices may remain."""

    healthy: bool
    active: str | None
    problems: list[Problem]
    checks: list[str] = Field(description="the checks that ran")


class ErrorOutput(_Output):
    """What any ``--json`` command prints when it fails before it has its own output.

    Exit status 2 for a user mistake; 1 when vendor or torch code raised where the command could not go on.
    """

    command: str
    error: str = Field(description="the message, as 'accelhal: error:' prints it on stderr")


class HelpOutput(_Output):
    """What ``--help`` and ``--version`` print under ``--json``: argparse's text, in one document (exit status 0)."""

    command: str = Field(description="the subcommand whose help this is; empty for the program's own")
    text: str = Field(description="the text the option prints without --json")


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


class RayResourcesOutput(_Output):
    """``accelhal ray-resources --json``: this node's devices as Ray resources (see ``docs/ray.md``)."""

    backend: str = Field(description="the active backend")
    resources: dict[str, int] = Field(
        description="Ray resource name -> device count: Ray's own name (GPU, NPU, ...) or the backend's; empty on cpu"
    )
    resources_json: str = Field(
        description="the JSON object 'ray start --resources=' takes: every resource but those Ray takes by option (GPU)"
    )
    arguments: list[str] = Field(description="the 'ray start' options: --num-gpus=N for GPU, --resources=JSON")


OUTPUT_MODELS: dict[str, type[BaseModel]] = {
    "info": InfoOutput,
    "list": ListOutput,
    "explain": ExplainOutput,
    "doctor": DoctorOutput,
    "check": CheckOutput,
    "ray-resources": RayResourcesOutput,
    "error": ErrorOutput,
    "help": HelpOutput,
}
"""Subcommand name -> the model its ``--json`` output conforms to (``error``: any command's, when it fails early;
``help``: ``--help`` and ``--version``'s)."""
