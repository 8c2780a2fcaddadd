"""The shape of one Lightning release, read from its source or from the installed package.

A release's shape is :meth:`accelhal.compat.lightning._releases.LightningShape.record`'s form:
the ``Accelerator`` ABC's members (Fabric's base and Lightning PyTorch's class), the accelerator
registry, the classes ``_log_device_info`` counts as "GPU ... used" by device type, and which
of the attributes the adapter sets Lightning's classes still assign. :func:`from_sources`
reads it with :mod:`ast` from a release's files (what ``scripts/record_lightning_shapes.py``
does for every release's wheels); :func:`from_installed` reads it from the imported package
(the members with :mod:`inspect`, the registry by calling it, the attributes on real
objects), so the installed release can be checked against its recorded row.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from accelhal.compat.lightning._releases import SHAPES

DATA = Path(__file__).resolve().parents[1] / "data" / "lightning-shapes.json"
ROOTS = {
    "lightning": {"fabric": "lightning/fabric", "pytorch": "lightning/pytorch"},
    "pytorch_lightning": {"fabric": "lightning_fabric", "pytorch": "pytorch_lightning"},
}
"""Each distribution's directories of Fabric and of Lightning PyTorch (``pytorch_lightning``
takes Fabric from the ``lightning_fabric`` distribution)."""
SOURCES = {
    "fabric_accelerator": ("fabric", "accelerators/accelerator.py"),
    "registry": ("fabric", "accelerators/registry.py"),
    "accelerator": ("pytorch", "accelerators/accelerator.py"),
    "setup": ("pytorch", "trainer/setup.py"),
    "MixedPrecision": ("pytorch", "plugins/precision/amp.py"),
    "SingleDeviceStrategy": ("pytorch", "strategies/single_device.py"),
    "_AcceleratorConnector": ("pytorch", "trainer/connectors/accelerator_connector.py"),
}
"""The files a shape is read from: key -> (part, path inside the part's directory)."""
WANTED = sorted({attribute for _, shape in SHAPES.rows for attribute in shape.attributes})
"""The attributes looked for (every row's), as ``Class.attribute``."""

Record = dict[str, Any]


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    found = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name]
    if len(found) != 1:
        raise ValueError(f"expected one class {name}, found {len(found)}")
    return found[0]


def _functions(node: ast.ClassDef | ast.Module) -> dict[str, ast.FunctionDef]:
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def _signature(function: ast.FunctionDef) -> str:
    arguments = ast.parse(ast.unparse(function)).body[0].args  # type: ignore[attr-defined]
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
        if arg is not None:
            arg.annotation = None
    return f"({ast.unparse(arguments)})"


def _members(classes: Iterable[ast.ClassDef]) -> dict[str, Record]:
    members: dict[str, Record] = {}
    for cls in classes:  # base first: a subclass's member replaces its base's
        for name, function in _functions(cls).items():
            if name.startswith("_"):
                continue
            decorators = {ast.unparse(d).rpartition(".")[2] for d in function.decorator_list}
            kind = "static" if "staticmethod" in decorators else "class" if "classmethod" in decorators else "method"
            abstract = "abstractmethod" in decorators
            members[name] = {"kind": kind, "abstract": abstract, "signature": _signature(function)}
    return dict(sorted(members.items()))


def gpu_used(setup_source: str) -> dict[str, str]:
    """``_log_device_info``'s GPU classes by device type: those whose ``is_available()`` names the
    type in the "GPU available" line and whose instances count as "used"."""
    function = _functions(ast.parse(setup_source))["_log_device_info"]
    available: dict[str, str] = {}
    used: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Call):
            test = ast.unparse(node.test)
            for statement in node.body:
                if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == "gpu_type":
                    device_type = ast.literal_eval(statement.value).strip(" ()")
                    available[device_type] = test.removesuffix(".is_available()")
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "gpu_used":
            call = node.value
            assert isinstance(call, ast.Call) and ast.unparse(call.func) == "isinstance", ast.unparse(call)
            used = {ast.unparse(element) for element in ast.walk(call.args[1]) if isinstance(element, ast.Name)}
    return {device_type: name for device_type, name in sorted(available.items()) if name in used}


def _assigned(cls: ast.ClassDef) -> set[str]:
    targets: set[str] = set()
    for node in ast.walk(cls):
        for target in node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]:
            if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
                targets.add(target.attr)
    return targets


def from_sources(read: Callable[[str], str]) -> Record:
    """A release's shape from its files; ``read(key)`` returns the text of ``SOURCES[key]``."""
    trees = {key: ast.parse(read(key)) for key in SOURCES}
    registry = _class(trees["registry"], "_AcceleratorRegistry")
    methods = _functions(registry)
    entry = sorted(
        ast.literal_eval(node.targets[0].slice)
        for node in ast.walk(methods["register"])
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Subscript)
        and ast.unparse(node.targets[0].value) == "data"
    )
    returned = next(n for n in ast.walk(methods["available_accelerators"]) if isinstance(n, ast.Return))
    assert isinstance(returned.value, ast.Call), ast.unparse(returned)
    return {
        "accelerator": _members(_class(trees[key], "Accelerator") for key in ("fabric_accelerator", "accelerator")),
        "registry": {
            "register": _signature(methods["register"]),
            "get": _signature(methods["get"]),
            "entry": entry,
            "available_accelerators": ast.unparse(returned.value.func),
        },
        "gpu_used": gpu_used(read("setup")),
        "attributes": [
            wanted
            for wanted in WANTED
            if wanted.partition(".")[2] in _assigned(_class(trees[wanted.partition(".")[0]], wanted.partition(".")[0]))
        ],
    }


def _plain(function: Any) -> str:
    signature = inspect.signature(function)
    parameters = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=parameters, return_annotation=signature.empty))


def from_installed(package: str) -> Record:
    """The installed ``package``'s shape (``"lightning.pytorch"`` or ``"pytorch_lightning"``), from its objects.

    Imports the package (which writes environment variables: call it in a child process).
    """
    accelerators = importlib.import_module(f"{package}.accelerators")
    base = accelerators.Accelerator
    members: dict[str, Record] = {}
    for cls in reversed(base.__mro__):
        for name, member in vars(cls).items():
            function = getattr(member, "__func__", member)
            if name.startswith("_") or not inspect.isfunction(function):
                continue
            kind = "static" if isinstance(member, staticmethod) else "class" if isinstance(member, classmethod) else ""
            members[name] = {
                "kind": kind or "method",
                "abstract": name in base.__abstractmethods__,
                "signature": _plain(function),
            }
    registry = accelerators.AcceleratorRegistry
    strategy = importlib.import_module(f"{package}.strategies").SingleDeviceStrategy("cpu")
    precision = importlib.import_module(f"{package}.plugins.precision").MixedPrecision("bf16-mixed", "cpu")
    connector = importlib.import_module(package).Trainer(logger=False)._accelerator_connector
    objects = {"SingleDeviceStrategy": strategy, "MixedPrecision": precision, "_AcceleratorConnector": connector}
    setup = importlib.import_module(f"{package}.trainer.setup")
    return {
        "accelerator": dict(sorted(members.items())),
        "registry": {
            "register": _plain(type(registry).register),
            "get": _plain(type(registry).get),
            "entry": sorted(dict.__getitem__(registry, "cpu")),
            "available_accelerators": type(registry.available_accelerators()).__name__,
        },
        "gpu_used": gpu_used(inspect.getsource(setup)),
        "attributes": [w for w in WANTED if hasattr(objects[w.partition(".")[0]], w.partition(".")[2])],
    }


def recorded() -> dict[str, dict[str, Record]]:
    """Every recorded release's shape, by distribution and release."""
    data: dict[str, dict[str, Record]] = json.loads(DATA.read_text(encoding="utf-8"))["releases"]
    return data


if __name__ == "__main__":  # the installed release's shape, for a test's child process
    import sys

    print(json.dumps(from_installed(sys.argv[1])))
