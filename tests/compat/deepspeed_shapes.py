"""The shape of DeepSpeed's ``DeepSpeedAccelerator`` in one release: its members, read from source or from the class.

A release's shape maps each member the class defines (dunders left out) to a record::

    {"kind": "method", "abstract": true, "signature": "(self, tensor, align_bytes=1)"}

``kind`` is ``method``, ``property``, ``static`` or ``attribute``; a signature leaves out
annotations; an attribute records its value instead. :func:`from_source` reads it from
``deepspeed/accelerator/abstract_accelerator.py`` with :mod:`ast` (what
``scripts/record_deepspeed_shapes.py`` does for every release's sdist);
:func:`from_class` reads it from the imported class, so the installed release can be
checked against its recorded row.

DeepSpeed's own accelerator for the host, ``CPU_Accelerator`` (``deepspeed/accelerator/cpu_accelerator.py``),
is recorded the same way (:func:`cpu_from_source`), each method whose body is one ``return``
statement with what it returns (``{"returns": "None"}``): the adapter answers as it does on cpu
(``DeepSpeedShape.cpu``).
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "deepspeed-shapes.json"
SOURCE = "deepspeed/accelerator/abstract_accelerator.py"
CLASS = "DeepSpeedAccelerator"
CPU_SOURCE = "deepspeed/accelerator/cpu_accelerator.py"
CPU_CLASS = "CPU_Accelerator"

Record = dict[str, Any]


def _record(kind: str, abstract: bool, signature: str) -> Record:
    return {"kind": kind, "abstract": abstract, "signature": signature}


def _class(tree: ast.Module, name: str, path: str) -> ast.ClassDef:
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    if len(found) != 1:
        raise ValueError(f"{path} defines {len(found)} classes named {name}")
    return found[0]


def _members(node: ast.ClassDef, returns: bool) -> dict[str, Record]:
    members: dict[str, Record] = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            decorators = {ast.unparse(d).rpartition(".")[2] for d in item.decorator_list}
            kind = "property" if "property" in decorators else "static" if "staticmethod" in decorators else "method"
            arguments = item.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                arg.annotation = None
            for star in (arguments.vararg, arguments.kwarg):
                if star is not None:
                    star.annotation = None
            members[item.name] = _record(kind, "abstractmethod" in decorators, f"({ast.unparse(arguments)})")
            body = [b for b in item.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
            if returns and len(body) == 1 and isinstance(body[0], ast.Return):
                value = body[0].value
                members[item.name]["returns"] = "None" if value is None else ast.unparse(value)
        elif isinstance(item, ast.Assign | ast.AnnAssign) and item.value is not None:
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    members[target.id] = _record("attribute", False, ast.unparse(item.value))
    return {name: record for name, record in members.items() if not name.startswith("__")}


def from_source(source: str) -> dict[str, Record]:
    """The members of ``DeepSpeedAccelerator`` in the module text ``source``."""
    return _members(_class(ast.parse(source), CLASS, SOURCE), returns=False)


def cpu_from_source(source: str) -> dict[str, Record]:
    """The members of ``CPU_Accelerator`` in the module text ``source``, with what one-line methods return."""
    return _members(_class(ast.parse(source), CPU_CLASS, CPU_SOURCE), returns=True)


def _plain(func: Any) -> str:
    signature = inspect.signature(func)
    params = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=signature.empty))


def from_class(cls: type[Any]) -> dict[str, Record]:
    """The members ``cls`` (the imported ``DeepSpeedAccelerator``) defines, as :func:`from_source` reads them."""
    members: dict[str, Record] = {}
    for name, member in vars(cls).items():
        if name.startswith("__") or name == "_abc_impl":
            continue
        if isinstance(member, property):
            abstract = bool(getattr(member.fget, "__isabstractmethod__", False))
            members[name] = _record("property", abstract, _plain(member.fget))
        elif isinstance(member, staticmethod):
            members[name] = _record("static", False, _plain(member.__func__))
        elif inspect.isfunction(member):
            members[name] = _record("method", bool(getattr(member, "__isabstractmethod__", False)), _plain(member))
        else:
            members[name] = _record("attribute", False, repr(member))
    return members


def recorded() -> dict[str, dict[str, Record]]:
    """Every recorded release's shape, by release."""
    data: dict[str, dict[str, Record]] = json.loads(DATA.read_text(encoding="utf-8"))["releases"]
    return data


def recorded_cpu() -> dict[str, dict[str, Record]]:
    """Every recorded release's ``CPU_Accelerator``, by release."""
    data: dict[str, dict[str, Record]] = json.loads(DATA.read_text(encoding="utf-8"))["cpu"]
    return data


def argument_problems(name: str, theirs: inspect.Signature, ours: inspect.Signature) -> list[str]:
    """What keeps ``ours`` from taking DeepSpeed's ``theirs``: the same names, optional wherever DeepSpeed's are."""
    expected, actual = list(theirs.parameters.values()), list(ours.parameters.values())
    if [p.name for p in actual[: len(expected)]] != [p.name for p in expected]:
        return [f"{name}{ours} does not take DeepSpeed's {theirs}"]
    return [
        f"{name}: {mine.name} is required, DeepSpeed defaults it to {p.default!r}"
        for p, mine in zip(expected, actual, strict=False)
        if p.default is not p.empty and mine.default is mine.empty
    ] + [f"{name}: extra required parameter {p.name}" for p in actual[len(expected) :] if p.default is p.empty]
