"""Each vocabulary of the reports (plugin states, failure stages, decision rules) is written once; each report
has its record's fields.

The records declare it (:mod:`accelhal.discovery.records`); the JSON reports and their schemas
take it from there, and every word the code gives a record is one of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import get_args

import pytest
from pydantic import BaseModel

from accelhal.discovery.records import (
    CandidateRecord,
    Decision,
    DecisionRule,
    Failure,
    FailureStage,
    PluginRecord,
    PluginState,
)
from accelhal.errors import PLUGIN_STAGES
from accelhal.process.torch_import import AutoloadFailure, TorchDiagnosis
from accelhal.report import (
    AutoloadFailureReport,
    CandidateReport,
    DetectionReport,
    FailureReport,
    PluginReport,
    TorchImportReport,
)


def schema(command: str) -> dict[str, object]:
    """``accelhal schema COMMAND`` as the command prints it, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-m", "accelhal", "schema", command], check=True, capture_output=True, text=True
    ).stdout
    return dict(json.loads(out))


def enum_of(document: dict[str, object], model: str, field: str) -> list[str]:
    definitions = document["$defs"]
    assert isinstance(definitions, dict)
    prop = definitions[model]["properties"][field]
    return list(prop["enum"])


def test_every_failure_stage_has_its_words_and_no_other_stage_has_any() -> None:
    assert set(PLUGIN_STAGES) == set(get_args(FailureStage))


def test_the_schemas_list_each_vocabulary_as_the_records_declare_it() -> None:
    listing = schema("list")
    assert enum_of(listing, "PluginReport", "state") == list(get_args(PluginState))
    assert enum_of(listing, "FailureReport", "stage") == list(get_args(FailureStage))
    assert listing["properties"]["rule"]["enum"] == list(get_args(DecisionRule))  # type: ignore[index]


NOT_REPORTED = {
    "Decision": {"environ", "unprobed", "visible_devices_envs"},
}
"""Record fields a report leaves out on purpose: the whole environment (the report shows the part it names, the
record's ``environment``), the backends a report probes before it is built, and the variables behind
``environment``."""

REPORTED_BESIDES = {
    "DetectionReport": {"environment", "accelhal_version", "python_version"},
}
"""Report fields that no record field holds: a record's property (``Decision.environment``), the versions."""


@pytest.mark.parametrize(
    ("record", "report"),
    [
        (CandidateRecord, CandidateReport),
        (PluginRecord, PluginReport),
        (Failure, FailureReport),
        (AutoloadFailure, AutoloadFailureReport),
        (TorchDiagnosis, TorchImportReport),
        (Decision, DetectionReport),
    ],
    ids=lambda cls: cls.__name__,
)
def test_each_report_has_its_records_fields_and_none_of_its_own(record: type, report: type[BaseModel]) -> None:
    """A field added to a record is reported (or named here as left out); a report field comes from its record."""
    fields = set(record.__annotations__) - NOT_REPORTED.get(record.__name__, set())
    reported = set(report.model_fields) - REPORTED_BESIDES.get(report.__name__, set())
    assert reported == fields, f"{report.__name__} lacks {fields - reported}, has of its own {reported - fields}"
