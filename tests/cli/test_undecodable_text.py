"""Bytes that are not UTF-8 in the environment, or an output that is not UTF-8: ``--json`` is still one document.

Python keeps an undecodable byte of ``os.environ`` as a lone surrogate, which pydantic cannot write as JSON;
before, ``accelhal info --json`` then ended with status 1 and an internal serialisation error (found by an
adversarial pass).
"""

from __future__ import annotations

import os

import pytest

import accelhal
from tests.cli.conftest import run_accelhal


def test_a_variable_holding_a_byte_that_is_not_utf8_is_shown_as_its_escape() -> None:
    result = run_accelhal("info", "--json", env={"CXX": os.fsdecode(b"g++\xff")})
    assert result.returncode == 0, result.output
    assert result.json()["detection"]["environment"]["CXX"] == "g++\\xff"


def test_the_report_of_such_an_environment_serialises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", os.fsdecode(b"g++\xff"))
    accelhal.reset_accelerator()
    report = accelhal.detect()
    assert report.environment["CXX"] == "g++\\xff"
    assert '"CXX":"g++\\\\xff"' in report.model_dump_json()


@pytest.mark.parametrize("args", [("info", "--json"), ("explain", "\udcff", "--json")], ids=["variable", "argument"])
def test_an_undecodable_backend_name_is_a_usage_error_with_a_document(args: tuple[str, ...]) -> None:
    env = {"ACCELHAL_ACCELERATOR": "\udcff"} if args[0] == "info" else {}
    result = run_accelhal(*args, env=env)
    assert result.returncode == 2, result.output
    assert "Traceback" not in result.output and "Serialization" not in result.output
    result.json()  # one document


def test_an_ascii_output_gets_the_same_document_in_ascii() -> None:
    result = run_accelhal("info", "--json", env={"PYTHONIOENCODING": "ascii", "CXX": "g++-é"})
    assert result.returncode == 0, result.output
    assert result.stdout.isascii()
    assert result.json()["detection"]["environment"]["CXX"] == "g++-é"
