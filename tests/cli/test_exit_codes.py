"""Exit statuses of every subcommand in every mode, as docs/reference/cli.md tables them.

The normal mode is covered with each command's own tests (tests/cli/test_commands.py);
here: strict mode with a failing plugin, a forced backend that cannot be used, and a bad
variable. Under strict mode the diagnostic commands still show every failure.
"""

from __future__ import annotations

import pytest

from tests.cli.test_doctor import problems

STRICT = {"ACCELHAL_STRICT": "1"}
FORCED = {"ACCELHAL_ACCELERATOR": "staged_nodev"}
BAD = {"ACCELHAL_STRICT": "maybe"}

EXPECTED = [
    # (mode, environment, command, exit status)
    ("strict", STRICT, ["info"], 2),
    ("strict", STRICT, ["list"], 1),
    ("strict", STRICT, ["explain"], 1),
    ("strict", STRICT, ["explain", "staged_nodev"], 1),
    ("strict", STRICT, ["explain", "staged_broken"], 1),
    ("strict", STRICT, ["explain", "tpu"], 2),
    ("strict", STRICT, ["doctor"], 1),
    ("strict", STRICT, ["schema"], 0),
    ("forced-unavailable", FORCED, ["info"], 2),
    ("forced-unavailable", FORCED, ["list"], 1),
    ("forced-unavailable", FORCED, ["explain", "cpu"], 1),
    ("bad-variable", BAD, ["list"], 2),
    ("bad-variable", BAD, ["explain"], 2),
    ("bad-variable", BAD, ["doctor"], 1),
]


@pytest.mark.parametrize(
    ("mode", "env", "args", "status"), EXPECTED, ids=[f"{m}: {' '.join(a)}" for m, _, a, _ in EXPECTED]
)
def test_exit_status(staged, mode: str, env: dict[str, str], args: list[str], status: int) -> None:
    result = staged(*args, "--json", env=env)
    assert result.returncode == status, result.output
    assert "Traceback" not in result.output
    if status == 2 and args[0] == "info":  # --json always prints a document; the error is part of it
        assert result.json()["error"]
    elif status == 2 and args[0] in ("list", "explain") and args[-1] != "tpu":
        assert result.stderr.startswith("accelhal: error: ")


def test_strict_mode_list_shows_every_failure(staged) -> None:
    data = staged("list", "--json", env=STRICT).json()
    assert data["chosen"] is None and "PluginError" in data["error"]
    assert any(f["plugin"] == "staged_broken" and "cannot be imported" in f["detail"] for f in data["failures"])
    assert {b["name"] for b in data["backends"]} >= {"staged_nodev", "staged_raises", "cpu"}  # nothing lost


def test_strict_mode_explain_shows_every_failure(staged) -> None:
    data = staged("explain", "staged_broken", "--json", env=STRICT).json()
    assert data["outcome"] == "plugin-failed"
    assert any("staged_broken" in d and "cannot be imported" in d for d in data["details"])


def test_strict_mode_doctor_shows_the_failures_it_refers_to(staged) -> None:
    result = staged("doctor", "--json", env=STRICT)
    found = problems(result)
    assert found["selection-failed"]["title"] == "ACCELHAL_STRICT=1 stops selection: a plugin failed"
    assert "ACCELHAL_BLOCK_PLUGINS=staged_broken" in found["selection-failed"]["fix"]
    assert "cannot be imported" in found["plugin-failed"]["detail"]
    human = staged("doctor", env=STRICT)
    assert "plugin 'staged_broken' cannot be imported" in human.stdout
