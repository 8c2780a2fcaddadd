"""What a release of Accelerate or transformers looks like where the adapter touches it.

A member's shape is one line: how the class holds it, its parameters, and which of the attributes
watched for it its body uses. :func:`from_source` reads the members from a module's source text
(a release's wheel); :func:`loaded` from those loaded now (at ``install()``); both from the
definition's syntax tree, so the two agree for the same release. The format:
``docs/contributing.md``, "Release shapes".
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from accelhal.plain_record import record


@record(frozen=True)
class Member:
    """A member the adapter replaces or relies on: ``module``'s ``qualname`` (``Class.name`` or a function)."""

    module: str
    """The module defining it (``"accelerate.state"``)."""
    qualname: str
    """``"PartialState._prepare_backend"`` or ``"get_max_memory"``."""
    watch: tuple[str, ...] = ()
    """Attributes of ``self`` whose use in the body is part of the shape."""
    relies_on: tuple[str, ...] | None = None
    """The parameters the adapter passes by name, when it passes the rest through (``None``: all are the shape)."""

    @property
    def key(self) -> str:
        """``"accelerate.state:PartialState._prepare_backend"``: the member's name in a shape."""
        return f"{self.module}:{self.qualname}"

    @property
    def path(self) -> str:
        """The module's file inside its distribution (``"accelerate/state.py"``)."""
        return self.module.replace(".", "/") + ".py"


def _parameters(arguments: ast.arguments, relies_on: tuple[str, ...] | None) -> str:
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if arguments.vararg is not None:
        names.append(f"*{arguments.vararg.arg}")
    elif arguments.kwonlyargs:
        names.append("*")
    names += [a.arg for a in arguments.kwonlyargs]
    if arguments.kwarg is not None:
        names.append(f"**{arguments.kwarg.arg}")
    if relies_on is not None:
        names = [*(name for name in names if name in relies_on), "..."]
    return f"({', '.join(names)})"


def _line(kind: str, node: ast.FunctionDef | ast.AsyncFunctionDef, member: Member) -> str:
    line = f"{kind} {_parameters(node.args, member.relies_on)}"
    if not member.watch:
        return line
    used = {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self"
    }
    uses = sorted(used & set(member.watch))
    return f"{line} uses {' '.join(uses)}" if uses else line


def _imports(tree: ast.Module, package: str) -> dict[str, str]:
    """Each imported name's ``<top-level package>.<name>`` (a relative import: ``package``'s)."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            top = package if node.level else (node.module or "").split(".")[0]
            for alias in node.names:
                names[alias.asname or alias.name] = f"{top}.{alias.name}"
    return names


def _kind(node: ast.FunctionDef | ast.AsyncFunctionDef, imports: Mapping[str, str]) -> str:
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Name):
            if decorator.id == "property":
                return "builtins.property"
            if decorator.id in imports:
                return imports[decorator.id]
        if isinstance(decorator, ast.Attribute) and isinstance(decorator.value, ast.Name):
            return f"{decorator.value.id}.{decorator.attr}"  # functools.cached_property
    return "function"


def _definition(body: list[ast.stmt], name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition of ``name`` in ``body``: the first one that is no property's setter or deleter."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            accessors = [
                d for d in node.decorator_list if isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter")
            ]
            if not accessors:
                return node
    return None


def from_source(source: str, members: Iterable[Member]) -> dict[str, str]:
    """The shapes of ``members`` (all of one module) in the module's ``source``; a missing member is ``"absent"``."""
    tree = ast.parse(source)
    shapes: dict[str, str] = {}
    for member in members:
        imports = _imports(tree, member.module.split(".")[0])
        body: list[ast.stmt] = tree.body
        *owners, name = member.qualname.split(".")
        for owner in owners:
            cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == owner), None)
            body = cls.body if cls is not None else []
        node = _definition(body, name)
        shapes[member.key] = "absent" if node is None else _line(_kind(node, imports), node, member)
    return shapes


def _descriptor_kind(value: Any) -> str:
    if inspect.isfunction(value):
        return "function"
    kind = type(value)
    return f"{kind.__module__.split('.')[0]}.{kind.__name__}"


def function(value: Any) -> Any:
    """The function a class attribute runs: itself, a property's getter, a cached property's function."""
    for attribute in ("fget", "func"):
        if hasattr(value, attribute):
            return getattr(value, attribute)
    return value


def loaded(members: Iterable[Member]) -> dict[str, str]:
    """The shapes of ``members`` as loaded now (importing their modules).

    A missing member is ``"absent"``; one whose source cannot be read, ``"<kind> without source"``.
    """
    shapes: dict[str, str] = {}
    for member in members:
        *owners, name = member.qualname.split(".")
        namespace: Any = importlib.import_module(member.module)
        for owner in owners:
            namespace = getattr(namespace, owner, None)
        value = vars(namespace).get(name) if namespace is not None else None
        if value is None:
            shapes[member.key] = "absent"
            continue
        try:
            source = textwrap.dedent(inspect.getsource(function(value)))
        except (OSError, TypeError):  # defined where no file holds it (exec, a C function)
            shapes[member.key] = f"{_descriptor_kind(value)} without source"
            continue
        node = _definition(ast.parse(source).body, function(value).__name__)
        shapes[member.key] = "absent" if node is None else _line(_descriptor_kind(value), node, member)
    return shapes


def from_files(read: Callable[[str], str], members: Iterable[Member]) -> dict[str, str]:
    """The shapes of ``members``, each module's source given by ``read(member.path)`` (once a file), in their order."""
    members = list(members)
    by_path: dict[str, list[Member]] = {}
    for member in members:
        by_path.setdefault(member.path, []).append(member)
    shapes: dict[str, str] = {}
    for path, found in by_path.items():
        shapes.update(from_source(read(path), found))
    return {member.key: shapes[member.key] for member in members}


def _installed_file(path: str) -> str:
    top = path.split("/")[0]
    spec = importlib.util.find_spec(top)  # a top-level package: found, not imported
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise FileNotFoundError(f"{top} is not an installed package")
    return (Path(locations[0]).parent / path).read_text(encoding="utf-8")


def installed(members: Iterable[Member]) -> dict[str, str]:
    """The shapes of ``members`` in the installed files of their distribution, imported or not (nothing is imported).

    A missing file is :class:`FileNotFoundError`.
    """
    return from_files(_installed_file, members)
