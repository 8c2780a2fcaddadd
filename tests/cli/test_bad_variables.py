"""Every ``--json`` command under a bad variable, as docs/reference/cli.md promises.

One JSON document on stdout: ``info``, ``list`` and ``explain`` their own, holding the error;
``doctor`` its own, with the ``bad-variable`` finding; ``check`` and ``ray-resources`` the
``error`` document; ``schema`` its schemas. The exit status is the table's (2; ``doctor`` 1,
``schema`` 0), and stderr holds the one ``accelhal: error:`` line where the status is 2.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from accelhal.cli.output.models import OUTPUT_MODELS
from tests.cli.conftest import Result, run_accelhal
from tests.cli.launch import RAY_COMMANDS

BAD = {
    "ACCELHAL_STRICT": ({"ACCELHAL_STRICT": "maybe"}, "ACCELHAL_STRICT='maybe' is not a boolean"),
    "ACCELHAL_ACCELERATOR": ({"ACCELHAL_ACCELERATOR": "cu da"}, "ACCELHAL_ACCELERATOR='cu da' contains ' '"),
    "ACCELHAL_PLUGINS": ({"ACCELHAL_PLUGINS": ",,"}, "ACCELHAL_PLUGINS=',,' has an empty entry"),
}

OWN_DOCUMENT = [
    *(("ACCELHAL_STRICT", args) for args in (["info"], ["explain", "cpu"], ["explain", "tpu"])),
    *((variable, args) for args in (["list"], ["explain"]) for variable in BAD),
]
"""The commands that print their own document when they fail: ``list`` and ``explain`` under each bad variable."""


def _document(result: Result, command: str) -> dict[str, Any]:
    assert "Traceback" not in result.output, result.output
    document = json.loads(result.stdout)  # exactly one document
    assert isinstance(document, dict)
    OUTPUT_MODELS[command].model_validate(document)
    return document


def _error_line(result: Result, said: str) -> str:
    """The one ``accelhal: error:`` line on stderr, which says ``said``; the message, without the label."""
    (line,) = result.stderr.splitlines()
    assert line.startswith("accelhal: error: ") and said in line, result.stderr
    return line.removeprefix("accelhal: error: ")


@pytest.mark.parametrize(("variable", "args"), OWN_DOCUMENT, ids=[f"{v}: {' '.join(a)}" for v, a in OWN_DOCUMENT])
def test_info_list_and_explain_print_their_own_document(variable: str, args: list[str]) -> None:
    env, said = BAD[variable]
    result = run_accelhal(*args, "--json", env=env)
    assert result.returncode == 2, result.output
    message = _error_line(result, said)
    document = _document(result, args[0])
    if args[0] == "info":
        assert document["accelerator"] is None and document["error"] == message
    elif args[0] == "list":
        assert document["chosen"] is None and document["rule"] == "error"
        assert message in str(document["error"])
    else:
        assert document["active"] is None and document["outcome"] == "selection-failed"
        assert document["name"] == (args[1] if len(args) > 1 else None)
        assert message in str(document["summary"])


@pytest.mark.parametrize("args", [["check"], ["check", "cpu"], *map(list, RAY_COMMANDS)], ids=" ".join)
def test_check_and_ray_resources_print_the_error_document(args: list[str]) -> None:
    env, said = BAD["ACCELHAL_STRICT"]
    result = run_accelhal(*args, "--json", env=env)
    assert result.returncode == 2, result.output
    message = _error_line(result, said)
    assert _document(result, "error") == {"command": args[0], "error": message}


@pytest.mark.parametrize("args", [["info"], ["list"]], ids=" ".join)
def test_a_bad_timeout_variable_is_refused_before_the_command_starts(args: list[str]) -> None:
    """Nothing is selected under it: ``info`` and ``list`` have no document of their own to print."""
    result = run_accelhal(*args, "--json", env={"ACCELHAL_TIMEOUT": "soon"})
    assert result.returncode == 2, result.output
    message = _error_line(result, "ACCELHAL_TIMEOUT='soon' is not a number of seconds from 1 to")
    assert _document(result, "error") == {"command": args[0], "error": message}


def test_doctor_reports_the_bad_variable_in_its_own_document() -> None:
    env, said = BAD["ACCELHAL_STRICT"]
    result = run_accelhal("doctor", "--json", env=env)
    assert result.returncode == 1, result.output
    document = _document(result, "doctor")
    assert document["healthy"] is False
    found = {p["code"]: p for p in document["problems"]}
    assert said in found["bad-variable"]["detail"]
    assert not result.stderr


def test_schema_reads_no_variable() -> None:
    result = run_accelhal("schema", "--json", env=BAD["ACCELHAL_STRICT"][0])
    assert result.returncode == 0, result.output
    assert set(json.loads(result.stdout)) == set(OUTPUT_MODELS)
