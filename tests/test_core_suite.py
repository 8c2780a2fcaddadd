"""The core suite (``pytest -m "not adapter"``, run on every torch accelhal supports) holds no adapter's test.

A framework adapter's test needs its framework, which pins a torch of its own; the core
suite must run on the oldest torch without it. Tests under ``tests/compat`` are marked
``adapter`` by their place; a test module elsewhere that imports a framework (or the
adapters' helpers in ``tests.compat``), or asks whether one is installed, marks itself.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ADAPTER_FRAMEWORKS, ADAPTER_TESTS

TESTS = Path(__file__).resolve().parent
LOOKUPS = {"find_spec", "importorskip", "import_module"}


def _framework(name: str) -> str | None:
    return next((f for f in ADAPTER_FRAMEWORKS if name == f or name.startswith(f"{f}.")), None)


def frameworks_named(tree: ast.Module) -> set[str]:
    """The adapter frameworks ``tree`` imports, or looks up by name (``find_spec("deepspeed")``)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if function in LOOKUPS and isinstance(node.args[0].value, str):
                names.append(node.args[0].value)
    return {found for name in names if (found := _framework(name))}


def marks_adapter(tree: ast.Module) -> bool:
    """Whether ``tree`` uses ``pytest.mark.adapter``."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "adapter"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        for node in ast.walk(tree)
    )


def test_modules_outside_compat_that_use_a_framework_are_marked_adapter() -> None:
    unmarked = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.is_relative_to(ADAPTER_TESTS):
            continue
        tree = ast.parse(path.read_text(), str(path))
        used = frameworks_named(tree)
        if used and not marks_adapter(tree):
            unmarked[str(path.relative_to(TESTS))] = sorted(used)
    assert not unmarked, f"mark these modules pytest.mark.adapter (they use a framework adapter's package): {unmarked}"


def test_the_scan_sees_imports_and_lookups() -> None:
    source = "import ray\nfrom accelerate.utils import x\nimportlib.util.find_spec('lightning')\nimport torch\n"
    assert frameworks_named(ast.parse(source)) == {"ray", "accelerate", "lightning"}
    assert not frameworks_named(ast.parse("import raytracing\nfrom tests.compatibility import x\n"))
    assert marks_adapter(ast.parse("pytestmark = [pytest.mark.adapter]"))


def test_not_adapter_selects_the_core_suite_only() -> None:
    """``-m "not adapter"`` over the adapters' tests and this module collects this module's tests alone."""
    paths = [
        "tests/compat",
        "tests/privateuse1/test_frameworks.py",
        "tests/privateuse1/test_accelerate.py",
        "tests/test_core_suite.py",
    ]
    command = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "-m", "not adapter", *paths]
    result = subprocess.run(command, cwd=TESTS.parent, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    collected = {line.split("::")[0] for line in result.stdout.splitlines() if "::" in line}
    assert collected == {"tests/test_core_suite.py"}, result.stdout
    assert "deselected" in result.stdout
