"""CI's frame: ``.ci/run`` runs exactly the README's test command, and every CI job has its row in the docs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_test_command() -> str:
    """The command of the README's block that runs the tests."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    (command,) = [block for block in blocks if "pytest" in block]
    return command


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_test_command() in lines


def core_ends() -> list[str]:
    """The sessions ``nox -t core-ends`` lists: the first and last torch of ``noxfile.CORE_TORCH``."""
    (line,) = [line for line in (ROOT / "noxfile.py").read_text().splitlines() if line.startswith("CORE_TORCH = ")]
    releases = ast.literal_eval(line.split("=", 1)[1].strip())
    return [f"core(torch='{releases[0]}')", f"core(torch='{releases[-1]}')"]


def test_every_ci_job_has_its_row_in_the_contributing_table() -> None:
    sessions = re.findall(r'Job\("([^"]+)"', (ROOT / ".ci" / "jobs.py").read_text())
    assert "xla" in sessions and "vllm(end='newest')" in sessions
    table = (ROOT / "docs" / "contributing.md").read_text().split("\n## CI\n", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    for session in [*sessions, *core_ends()]:
        assert any(f"`{session}`" in row for row in rows), f"docs/contributing.md's CI table has no row for {session}"
