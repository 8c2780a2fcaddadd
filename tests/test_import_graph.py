"""The import graph of ``accelhal/``, function-local imports included, has no cycle.

Imports under ``if TYPE_CHECKING:`` are excluded (they never run); a string naming an
accelhal module counts as an import of it (lazy imports through ``importlib``). Importing
``accelhal.a.b`` counts as an edge to ``accelhal.a.b`` only: a package's ``__init__`` is
not an edge of every import below it (accelhal's ``__init__`` modules load lazily).
"""

from __future__ import annotations

import ast
from pathlib import Path

import accelhal

ROOT = Path(accelhal.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}
"""Every module of accelhal, by dotted name."""


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _calls_import_module(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )


def _resolve(target: str) -> str | None:
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def imports_of(name: str) -> set[str]:
    """The accelhal modules ``name`` imports anywhere in its code, outside ``TYPE_CHECKING`` blocks."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(filter(None, (_resolve(a.name) for a in node.names if a.name.startswith("accelhal"))))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            if base.startswith("accelhal"):
                for alias in node.names:
                    target = _resolve(f"{base}.{alias.name}")
                    if target is not None:
                        found.add(target)
        elif isinstance(node, ast.Dict) or (isinstance(node, ast.Call) and _calls_import_module(node)):
            # a lazy import by name: importlib.import_module("accelhal.x"), the packages' lazy tables
            values = node.values if isinstance(node, ast.Dict) else node.args
            found.update(v.value for v in values if isinstance(v, ast.Constant) and v.value in MODULES)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(name)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def test_the_walker_sees_function_local_imports_and_skips_type_checking() -> None:
    contract = imports_of("accelhal.contract")
    assert "accelhal.ops" in contract  # function-local: op_builder_dir/get_op_builder
    assert "accelhal.report" not in contract or "accelhal.contract" not in imports_of("accelhal.report")
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_accelhal_has_no_import_cycle() -> None:
    graph = {name: imports_of(name) for name in MODULES}
    assert find_cycle(graph) is None


def test_the_contract_imports_nothing_above_it() -> None:
    """The contract's imports, transitively, never reach selection, the CLI, testing or compat."""
    graph = {name: imports_of(name) for name in MODULES}
    reached, pending = set(), ["accelhal.contract"]
    while pending:
        for nxt in graph[pending.pop()] - reached:
            reached.add(nxt)
            pending.append(nxt)
    above = {"accelhal.selection", "accelhal.cli", "accelhal.testing", "accelhal.compat", "accelhal.validation"}
    assert not {m for m in reached if m in above or m.startswith(tuple(f"{a}." for a in above))}
