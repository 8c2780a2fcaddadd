"""The import graph of ``accelhal/``, function-local imports included, has no cycle.

Imports under ``if TYPE_CHECKING:`` are excluded (they never run); a string naming an
accelhal module counts as an import of it (lazy imports through ``importlib.import_module``,
``__import__`` and the packages' lazy tables). Importing ``accelhal.a.b`` is an edge to
``accelhal.a.b`` and to ``accelhal.a``, whose ``__init__`` Python runs first, unless the
importer is inside ``accelhal.a`` (then that ``__init__`` has run already).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

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


_IMPORT_CALLS = {"import_module": ("name", "package"), "__import__": ("name", "globals")}
"""The functions that import a module named by a string, with their first two parameters."""


def _imported_by_call(node: ast.Call) -> str | None:
    """The module ``importlib.import_module(...)`` or ``__import__(...)`` names by constants, else ``None``."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if called not in _IMPORT_CALLS:
        return None
    given = [*zip(_IMPORT_CALLS[called], node.args, strict=False), *((k.arg, k.value) for k in node.keywords)]
    strings = {k: v.value for k, v in given if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    name = strings.get("name", "")
    if name.startswith(".") and "package" in strings:
        name = importlib.util.resolve_name(name, strings["package"])
    return name if name.startswith("accelhal") else None


def _packages_run_first(target: str, importer: str) -> set[str]:
    """The packages of ``target`` whose ``__init__`` importing it runs (those ``importer`` is not inside)."""
    parts = target.split(".")
    packages = {".".join(parts[:k]) for k in range(1, len(parts))}
    return {p for p in packages if p in MODULES and importer != p and not importer.startswith(f"{p}.")}


def _resolve(target: str) -> str | None:
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def imports_of(name: str, source: str | None = None) -> set[str]:
    """The accelhal modules ``name`` (or ``source`` as its code) imports anywhere, outside ``TYPE_CHECKING`` blocks."""
    tree = ast.parse(MODULES[name].read_text() if source is None else source)
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
        elif isinstance(node, ast.Call) and (called := _imported_by_call(node)):
            found.update(filter(None, [_resolve(called)]))
        elif isinstance(node, ast.Dict):  # the packages' lazy tables: {"name": "accelhal.x"}
            found.update(v.value for v in node.values if isinstance(v, ast.Constant) and v.value in MODULES)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.update(*(_packages_run_first(target, name) for target in list(found)))
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
    contract = imports_of("accelhal.contract.accelerator")
    assert "accelhal.ops" in contract  # function-local: op_builder_dir/get_op_builder
    assert "accelhal.report" not in contract or "accelhal.contract.accelerator" not in imports_of("accelhal.report")
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


@pytest.mark.parametrize(
    ("name", "source", "reached"),
    [
        (
            "accelhal.process.settings",
            "from accelhal.ops.cache import file_digest",
            {"accelhal.ops.cache", "accelhal.ops"},
        ),
        ("accelhal.process.settings", "import accelhal.ops.cache", {"accelhal.ops.cache", "accelhal.ops"}),
        ("accelhal.ops.builder", "from accelhal.ops.cache import file_digest", {"accelhal.ops.cache"}),
        ("accelhal.ops", "from accelhal.ops.cache import file_digest", {"accelhal.ops.cache"}),
        ("accelhal.errors", "def f():\n    __import__('accelhal.selection')", {"accelhal.selection"}),
        (
            "accelhal.errors",
            "import importlib\nimportlib.import_module(name='accelhal.selection')",
            {"accelhal.selection"},
        ),
        (
            "accelhal.errors",
            "import importlib\nimportlib.import_module('.selection', 'accelhal')",
            {"accelhal.selection"},
        ),
        ("accelhal.errors", "import importlib\nimportlib.import_module(f'accelhal.{x}')", set()),
    ],
)
def test_the_walker_sees_parent_packages_and_imports_by_call(name: str, source: str, reached: set[str]) -> None:
    """A package's ``__init__`` runs before its module, unless the importer is inside the package."""
    assert imports_of(name, source) == reached


def test_a_cycle_through_a_package_init_is_found() -> None:
    """``accelhal/ops/__init__.py`` imports eagerly what imports the settings: settings cannot import ops."""
    graph = {name: imports_of(name) for name in MODULES}
    graph["accelhal.process.settings"] = imports_of(
        "accelhal.process.settings",
        MODULES["accelhal.process.settings"].read_text() + "\nfrom accelhal.ops.cache import *\n",
    )
    assert find_cycle(graph) is not None


def test_accelhal_has_no_import_cycle() -> None:
    graph = {name: imports_of(name) for name in MODULES}
    assert find_cycle(graph) is None


def documented_layers() -> list[set[str]]:
    """The layer list of ``docs/contributing.md``, lowest first: the modules each line names."""
    text = (ROOT.parent / "docs" / "contributing.md").read_text()
    block = text.split("```\n")[1]
    names = (re.split(r", | -> ", line.split("  ")[0].strip()) for line in block.splitlines() if line.strip())
    return [{f"accelhal.{name}" for name in line} for line in names]


def is_docstring_only(module: str) -> bool:
    """Whether ``module`` is a package whose ``__init__`` holds only its docstring (importing it runs nothing)."""
    path = MODULES[module]
    body = ast.parse(path.read_text()).body
    return path.name == "__init__.py" and len(body) == 1 and isinstance(body[0], ast.Expr)


def layer_of(module: str, layers: list[set[str]]) -> int | None:
    """The index of the line that places ``module`` (or the package it is in)."""
    while module:
        found = [i for i, layer in enumerate(layers) if module in layer]
        if found:
            return found[0]
        module = module.rpartition(".")[0]
    return None


def test_every_module_is_in_the_documented_layers() -> None:
    layers = documented_layers()
    assert not [m for m in MODULES if m != "accelhal" and layer_of(m, layers) is None]


def test_imports_point_down_the_documented_layers() -> None:
    """No module imports one that ``docs/contributing.md`` lists on a later line."""
    layers = documented_layers()
    graph = {name: imports_of(name) for name in MODULES if name != "accelhal"}
    up = {
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if b != "accelhal" and not is_docstring_only(b) and (layer_of(b, layers) or 0) > (layer_of(a, layers) or 0)
    }
    assert not up


def test_the_contract_imports_nothing_above_it() -> None:
    """The contract's imports, transitively, never reach a module the docs place above it."""
    graph = {name: imports_of(name) for name in MODULES}
    reached: set[str] = set()
    pending = ["accelhal.contract.accelerator"]
    while pending:
        for nxt in graph[pending.pop()] - reached:
            reached.add(nxt)
            pending.append(nxt)
    layers = documented_layers()
    contract = layer_of("accelhal.contract.accelerator", layers)
    assert contract is not None
    above: set[str] = set().union(*layers[contract + 1 :])
    assert {"accelhal.selection", "accelhal.cli", "accelhal.contract.device_module", "accelhal.distributed"} <= above
    assert not {m for m in reached if m in above or m.startswith(tuple(f"{a}." for a in above))}
