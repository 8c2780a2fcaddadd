"""What the Ray adapter touches in one Ray release, read from the release's source or from the imported Ray.

A release's record is one JSON object::

    {"train_v2": "default", "train_v2_variable": "RAY_TRAIN_V2_ENABLED",
     "api": {"sessions": {...}, "torch_config": [...], "on_start": [...], ...},
     "managers": {"NvidiaGPUAcceleratorManager": ["GPU", "CUDA_VISIBLE_DEVICES"], ...}}

``train_v2`` is ``absent`` (Ray Train v1 only), ``opt-in`` (v2 when ``RAY_TRAIN_V2_ENABLED=1``) or
``default``; ``api`` is the rest of what the adapter calls or subclasses (each function by its
parameters, an absent one left out); ``managers`` is each of Ray's accelerator managers
(``get_all_accelerator_managers()``) with its resource and visible-devices variable.
:func:`from_source` reads the record from the release's files with :mod:`ast` (what
``scripts/record_ray_shapes.py`` does for every release's wheel); :func:`from_ray` reads it from
the imported Ray, so that the installed release can be checked against its recorded row.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import inspect
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "ray-shapes.json"

Record = dict[str, Any]
Read = Callable[[str], "str | None"]
"""Reads a file of the release by its path in the wheel (``ray/train/torch/config.py``); ``None`` when absent."""

V2_CONSTANTS = "ray.train.v2._internal.constants"
ACCELERATORS = "ray._private.accelerators"
SESSIONS = {
    "v1": ("ray.train._internal.session", "get_session"),
    "v2": ("ray.train.v2._internal.execution.context", "get_train_context"),
}
"""Per Ray Train version, the function that answers only in one of its workers."""
TORCH_CONFIG = ("ray.train.torch.config", "TorchConfig")
TORCH_BACKEND = ("ray.train.torch.config", "_TorchBackend")
HOOKS = ("backend_cls", "train_func_context")
"""The properties of ``TorchConfig`` the adapter's subclass overrides."""
WORKER_GROUPS = {
    "v1": ("ray.train._internal.worker_group", "WorkerGroup"),
    "v2": ("ray.train.v2._internal.execution.worker_group.worker_group", "WorkerGroup"),
}
PREPARE = ("ray.train.torch.train_loop_utils", ("prepare_model", "prepare_data_loader"))
RUNTIME_CONTEXT = ("ray.runtime_context", "RuntimeContext", "get_accelerator_ids")
ACCELERATOR_FUNCTIONS = ("get_all_accelerator_managers", "get_accelerator_manager_for_resource")
MANAGER = ("ray._private.accelerators.accelerator", "AcceleratorManager")
MANAGER_METHODS = (
    "get_resource_name",
    "get_visible_accelerator_ids_env_var",
    "get_current_process_visible_accelerator_ids",
)


def documented_resources(release: str) -> dict[str, str]:
    """``docs/ray.md``'s Ray resource of each built-in backend under Ray ``release`` ("—" for none).

    The section's first table, with the rows of its table of older releases whose range holds ``release``.
    """
    from accelhal.compat._releases import release_key

    text = (Path(__file__).resolve().parents[2] / "docs" / "ray.md").read_text()
    section = text.split("## Resources", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (?:`(\w+)`|—) \|", section, flags=re.MULTILINE)
    resources = {backend: resource or "—" for backend, resource in rows}
    for backend, first, last, resource in re.findall(
        r"^\| `(\w+)` \| ([\d.]+) to ([\d.]+) \| `(\w+)` \|", section, flags=re.MULTILINE
    ):
        if release_key(first) <= release_key(release) <= release_key(last):
            resources[backend] = resource
    return resources


def load() -> dict[str, Record]:
    """The recorded releases: ``{release: record}``."""
    recorded: dict[str, Record] = json.loads(DATA.read_text())
    return recorded


def _paths(module: str) -> tuple[str, str]:
    base = module.replace(".", "/")
    return f"{base}.py", f"{base}/__init__.py"


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    arguments = node.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if arguments.vararg is not None:
        names.append("*" + arguments.vararg.arg)
    names += [a.arg for a in arguments.kwonlyargs]
    if arguments.kwarg is not None:
        names.append("**" + arguments.kwarg.arg)
    return names


def _signature_parameters(function: Any) -> list[str]:
    prefixes = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [prefixes.get(p.kind, "") + p.name for p in inspect.signature(function).parameters.values()]


class _Source:
    """One release's files, parsed on demand."""

    def __init__(self, read: Read) -> None:
        self.read = read
        self.trees: dict[str, ast.Module | None] = {}

    def tree(self, module: str) -> ast.Module | None:
        if module not in self.trees:
            module_file, package = _paths(module)
            text = self.read(module_file)
            text = self.read(package) if text is None else text
            self.trees[module] = None if text is None else ast.parse(text)
        return self.trees[module]

    def top(self, module: str, name: str) -> ast.AST | None:
        tree = self.tree(module)
        found = [
            n for n in (tree.body if tree else []) if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name
        ]
        return found[-1] if found else None

    def method(self, module: str, cls: str, name: str) -> ast.FunctionDef | None:
        """The method ``name`` of the class ``cls`` of ``module``, or of the nearest base that defines it."""
        node = self.top(module, cls)
        if not isinstance(node, ast.ClassDef):
            return None
        found = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name]
        if found:
            return found[-1]
        for base in node.bases:
            if isinstance(base, ast.Name):
                home = module if self.top(module, base.id) else self.imported_from(module, base.id)
                inherited = self.method(home, base.id, name)
                if inherited is not None:
                    return inherited
        return None

    def constant(self, module: str, name: str) -> Any:
        """The value of a module-level constant, following ``from ... import`` within Ray."""
        tree = self.tree(module)
        for node in reversed(tree.body if tree else []):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return ast.literal_eval(node.value)
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and any((a.asname or a.name) == name for a in node.names)
            ):
                (alias,) = [a for a in node.names if (a.asname or a.name) == name]
                return self.constant(node.module, alias.name)
        raise ValueError(f"{module} defines no constant {name}")

    def returned(self, module: str, function: ast.FunctionDef) -> Any:
        """The one value every ``return`` of ``function`` gives where no variable is set.

        A return of a constant, a module constant, or a local name whose value is the one its
        assignment in the function's own body gives (before any branch on the environment).
        """
        local = {
            target.id: node.value
            for node in function.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        values = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if isinstance(value, ast.Name) and value.id in local:
                    value = local[value.id]
                values.add(self.constant(module, value.id) if isinstance(value, ast.Name) else ast.literal_eval(value))
        if len(values) != 1:
            raise ValueError(f"{module}.{function.name} returns {sorted(map(str, values))}, not one value")
        return values.pop()

    def imported_from(self, module: str, name: str) -> str:
        """The module ``module`` imports ``name`` from."""
        tree = self.tree(module)
        for node in tree.body if tree else []:
            if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
                return node.module
        raise ValueError(f"{module} does not import {name}")


def from_source(read: Read) -> Record:
    """The record of the release whose files ``read`` gives."""
    source = _Source(read)
    default = None
    if source.tree(V2_CONSTANTS) is not None:
        enabled = source.top(V2_CONSTANTS, "is_v2_enabled")
        assert isinstance(enabled, ast.FunctionDef)
        (call,) = [n for n in ast.walk(enabled) if isinstance(n, ast.Call)]
        default = ast.literal_eval(call.args[1])
    config = source.top(*TORCH_CONFIG)
    assert isinstance(config, ast.ClassDef)
    fields = [n.target.id for n in config.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    hooks = [
        n.name
        for n in config.body
        if isinstance(n, ast.FunctionDef)
        and n.name in HOOKS
        and any(ast.unparse(d) == "property" for d in n.decorator_list)
    ]
    on_start = source.method(*TORCH_BACKEND, "on_start")
    manager_set = source.top(ACCELERATORS, "get_all_accelerator_managers")
    managers = {}
    for node in ast.walk(manager_set) if manager_set else ():
        if isinstance(node, ast.Set):
            for element in node.elts:
                assert isinstance(element, ast.Name)
                module = source.imported_from(ACCELERATORS, element.id)
                named = [source.method(module, element.id, m) for m in MANAGER_METHODS[:2]]
                managers[element.id] = [source.returned(module, f) if f else None for f in named]
    api: Record = {
        "sessions": {
            train: f"{module}:{name}" for train, (module, name) in SESSIONS.items() if source.top(module, name)
        },
        "torch_config": fields,
        "hooks": hooks,
        "on_start": _parameters(on_start) if on_start else None,
        "execute": {
            train: _parameters(found)
            for train, (module, cls) in WORKER_GROUPS.items()
            if (found := source.method(module, cls, "execute"))
        },
        "prepare": {
            name: _parameters(found)
            for name in PREPARE[1]
            if isinstance(found := source.top(PREPARE[0], name), ast.FunctionDef)
        },
        "accelerator_ids": source.method(*RUNTIME_CONTEXT) is not None,
        "accelerators": [name for name in ACCELERATOR_FUNCTIONS if source.top(ACCELERATORS, name)],
        "manager_methods": [name for name in MANAGER_METHODS if source.method(*MANAGER, name)],
    }
    return _record(
        default, source.constant(V2_CONSTANTS, "V2_ENABLED_ENV_VAR") if default is not None else None, api, managers
    )


def _record(default: bool | None, variable: str | None, api: Record, managers: dict[str, list[Any]]) -> Record:
    train_v2 = "absent" if default is None else "default" if default else "opt-in"
    return {
        "train_v2": train_v2,
        "train_v2_variable": variable,
        "api": api,
        "managers": dict(sorted(managers.items())),
    }


@contextlib.contextmanager
def _unset(variable: str) -> Iterator[None]:
    saved = os.environ.pop(variable, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[variable] = saved


def _imported(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _member(module: str, *names: str) -> Any:
    found = _imported(module)
    for name in names:
        found = inspect.getattr_static(found, name, None) if found is not None else None
    return found


def from_ray() -> Record:
    """The record of the installed Ray, read from its imported modules."""
    constants = _imported(V2_CONSTANTS)
    default, variable = None, None
    if constants is not None:
        variable = constants.V2_ENABLED_ENV_VAR
        with _unset(variable):
            default = bool(constants.is_v2_enabled())
    config = _member(*TORCH_CONFIG)
    on_start = _member(*TORCH_BACKEND, "on_start")
    accelerators = importlib.import_module(ACCELERATORS)
    api: Record = {
        "sessions": {train: f"{module}:{name}" for train, (module, name) in SESSIONS.items() if _member(module, name)},
        "torch_config": [f.name for f in dataclasses.fields(config)],
        "hooks": [name for name in HOOKS if isinstance(vars(config).get(name), property)],
        "on_start": _signature_parameters(on_start) if on_start else None,
        "execute": {
            train: _signature_parameters(found)
            for train, (module, cls) in WORKER_GROUPS.items()
            if (found := _member(module, cls, "execute"))
        },
        "prepare": {name: _signature_parameters(found) for name in PREPARE[1] if (found := _member(PREPARE[0], name))},
        "accelerator_ids": _member(*RUNTIME_CONTEXT) is not None,
        "accelerators": [name for name in ACCELERATOR_FUNCTIONS if hasattr(accelerators, name)],
        "manager_methods": [name for name in MANAGER_METHODS if _member(*MANAGER, name)],
    }
    managers = {
        manager.__name__: [manager.get_resource_name(), manager.get_visible_accelerator_ids_env_var()]
        for manager in accelerators.get_all_accelerator_managers()
    }
    return _record(default, variable, api, managers)
