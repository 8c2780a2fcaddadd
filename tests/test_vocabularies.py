"""Each vocabulary of the reports (plugin states, failure stages, decision rules) is written once.

The records declare it (:mod:`accelhal.discovery.records`); the JSON reports and their schemas
take it from there, and every word the code gives a record is one of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import get_args

from accelhal.discovery.records import DecisionRule, FailureStage, PluginState
from accelhal.errors import PLUGIN_STAGES


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
