"""Every subcommand, run as a user runs it: in a child process, output piped (plain text)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from typing import Any

import pytest

from accelhal.cli import main
from accelhal.cli.output.models import OUTPUT_MODELS
from tests.cli.conftest import Result, run_accelhal

HUMAN_COMMANDS = [["info"], ["list"], ["explain"], ["explain", "cpu"], ["doctor"]]


def assert_clean(result: Result) -> None:
    assert "Traceback" not in result.output, result.output
    too_wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    padded = [line for line in result.stdout.splitlines() if line != line.rstrip()]
    assert not padded, padded  # piped output pastes cleanly: no trailing blanks


@pytest.mark.parametrize("args", HUMAN_COMMANDS, ids=" ".join)
def test_subcommand_succeeds_and_fits_80_columns(args: list[str]) -> None:
    result = run_accelhal(*args)
    assert result.returncode == 0, result.output
    assert result.stdout.strip()
    assert "\x1b[" not in result.stdout  # piped + NO_COLOR: plain text
    assert_clean(result)


WITHOUT_PYTEST = (
    "import sys; sys.modules['pytest'] = None  # as if pytest were not installed (the README's first set-up)\n"
    "from accelhal.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("args", [*HUMAN_COMMANDS, ["schema"]], ids=" ".join)
def test_every_subcommand_but_check_runs_without_pytest(args: list[str]) -> None:
    """pytest is a test-time dependency: `pip install accelhal && accelhal info` must work."""
    result = run_accelhal(*args, code=WITHOUT_PYTEST, code_after_torch=True)  # torch imports no pytest
    assert result.returncode == 0, result.output
    assert "Traceback" not in result.output, result.output


def test_check_without_pytest_says_what_to_install() -> None:
    result = run_accelhal("check", code=WITHOUT_PYTEST, code_after_torch=True)
    assert result.returncode == 2, result.output
    message = " ".join(result.stderr.split())  # rich wraps at 80 columns
    assert "pytest, which is not installed here" in message
    # what pip can install while accelhal is not on the index: the kit's light extra, not 'test'
    assert (
        "install it with: pip install 'pytest>=8' (accelhal's kit extra; from a clone: pip install './accelhal[kit]')"
        in message
    )
    assert "pip install 'accelhal[" not in message
    assert "Traceback" not in result.output


def test_info_names_the_active_backend_and_rule() -> None:
    result = run_accelhal("info")
    assert "active backend: cpu" in result.stdout
    assert "chosen by: fallback" in result.stdout
    assert "communication backend: gloo" in result.stdout


def test_list_shows_every_registered_backend_in_priority_order(staged) -> None:
    result = staged("list", "--json")
    backends = result.json()["backends"]
    priorities = [b["priority"] for b in backends]
    assert priorities == sorted(priorities, reverse=True)
    by_name = {b["name"]: b for b in backends}
    assert by_name["staged_missing"]["status"] == "not-installed"
    assert by_name["staged_nodev"]["status"] == "no-device"
    assert "staged probe failure" in by_name["staged_raises"]["reason"]
    assert by_name["cpu"]["active"] and by_name["cpu"]["source"] == "built-in"
    assert by_name["staged_nodev"]["source"] == "staged-plugins 1.0"
    failed = [f for f in result.json()["failures"] if f["plugin"] == "staged_broken"]
    assert failed and "cannot be imported" in failed[0]["detail"]
    human = staged("list")
    assert "staged_broken" in human.stdout and "failed" in human.stdout
    assert_clean(human)


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    result = run_accelhal("schema")
    assert result.returncode == 0, result.output
    return dict(result.json())


def validate(schema: dict[str, Any], command: str, payload: str) -> None:
    """Validate with jsonschema when it is installed, else with the pydantic model itself."""
    try:
        import jsonschema
    except ImportError:
        OUTPUT_MODELS[command].model_validate_json(payload)
        return
    jsonschema.validate(json.loads(payload), schema)


@pytest.mark.parametrize(
    ("command", "args", "env", "status"),
    [
        ("info", ["info"], {}, 0),
        ("list", ["list"], {}, 0),
        ("explain", ["explain"], {}, 0),
        ("explain", ["explain", "staged_nodev"], {}, 0),
        ("explain", ["explain", "tpu"], {}, 2),
        ("doctor", ["doctor"], {}, 1),
        ("doctor", ["doctor"], {"ACCELHAL_BLOCK_PLUGINS": "staged_broken,stagedplugins"}, 0),
    ],
)
def test_json_output_validates_against_schema(schemas, staged, command, args, env, status) -> None:
    result = staged(*args, "--json", env=env)
    assert result.returncode == status, result.output
    validate(schemas[command], command, result.stdout)


def test_schema_lists_every_subcommand_with_output(schemas) -> None:
    assert set(schemas) == {"info", "list", "explain", "doctor", "check", "ray-resources", "error", "help"}
    assert all(s["type"] == "object" for s in schemas.values())


def test_jsonschema_rejects_a_wrong_payload(schemas) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"healthy": "yes"}, schemas["doctor"])


MISTAKES = {
    "blank-in-name": ({"ACCELHAL_ACCELERATOR": "cu da"}, "ACCELHAL_ACCELERATOR"),
    "unknown-forced": ({"ACCELHAL_ACCELERATOR": "tpu"}, "tpu"),
    "bad-boolean": ({"ACCELHAL_STRICT": "maybe"}, "ACCELHAL_STRICT"),
    "block-fallback": ({"ACCELHAL_BLOCK_PLUGINS": "cpu"}, "ACCELHAL_BLOCK_PLUGINS"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.parametrize("args", [["info"], ["list"], ["explain"], ["doctor"], ["check"]], ids=" ".join)
def test_user_mistake_is_one_clear_message_and_nonzero_exit(
    mistake: str, args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process, so that any exception escaping main() (what would print a traceback) fails the test."""
    env, named = MISTAKES[mistake]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    status = main(args)
    out, err = capsys.readouterr()
    assert status != 0, out + err
    if args != ["check"] or importlib.util.find_spec("accelhal.testing") is not None:
        assert named in " ".join((out + err).split())


def test_forced_cuda_on_this_machine_is_a_clear_error() -> None:
    result = run_accelhal("info", env={"ACCELHAL_ACCELERATOR": "cuda"})
    assert result.returncode == 2
    assert result.stderr.startswith("accelhal: error:")
    assert "'cuda'" in result.stderr and "ACCELHAL_ACCELERATOR" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [["explain", "tpu"], ["check", "tpu"], ["frobnicate"], ["schema", "nope"], ["info", "--bogus"]],
    ids=" ".join,
)
def test_bad_command_line_exits_2_without_traceback(args: list[str]) -> None:
    result = run_accelhal(*args)
    assert result.returncode == 2, result.output
    assert "Traceback" not in result.output


def test_check_without_the_conformance_kit_says_so() -> None:
    if importlib.util.find_spec("accelhal.testing") is not None:
        pytest.skip("the conformance kit is installed; test_check.py covers the real run")
    result = run_accelhal("check")
    assert result.returncode == 2
    assert "conformance suite is not available" in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


def test_module_entry_point_matches_console_script() -> None:
    result = run_accelhal("--version")
    assert result.returncode == 0 and result.stdout.startswith("accelhal ")


@pytest.mark.parametrize(
    ("env", "plugins", "reason"),
    [
        (
            {"ACCELHAL_BLOCK_PLUGINS": "staged_blockme,mps"},
            {"mps", "staged_blockme"},
            "listed in ACCELHAL_BLOCK_PLUGINS",
        ),
        ({"ACCELHAL_PLUGINS": "stagedplugins"}, {"staged_blockme", "staged_broken"}, "not listed in ACCELHAL_PLUGINS"),
        (
            {"ACCELHAL_DISABLE_PLUGIN_AUTOLOAD": "1"},
            {"stagedplugins", "staged_blockme", "staged_broken"},
            "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD=1 loads only built-in backends",
        ),
    ],
    ids=["blocked", "not-allowed", "autoload-disabled"],
)
def test_info_says_which_plugins_a_variable_held_back(
    staged, env: dict[str, str], plugins: set[str], reason: str
) -> None:
    data = staged("info", "--json", env=env).json()
    assert {p["name"] for p in data["held_back"]} == plugins
    assert {p["detail"] for p in data["held_back"]} == {reason}
    human = staged("info", env=env)
    assert human.returncode == 0, human.output
    count, _, items = human.stdout.partition("plugins held back: ")[2].partition("\n")
    assert count == str(len(plugins))
    names, _, said = " ".join(items.split()).removeprefix("- ").partition(": ")  # one item: one reason
    assert set(names.split(", ")) == plugins
    assert said == reason


def test_info_names_no_held_back_plugins_when_none_is() -> None:
    result = run_accelhal("info")
    assert "held back" not in result.stdout
    assert run_accelhal("info", "--json").json()["held_back"] == []
