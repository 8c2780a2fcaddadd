"""Every call DeepSpeed makes into its accelerator, read from the installed DeepSpeed's source.

``scan()`` walks DeepSpeed's modules with :mod:`ast` and returns one :class:`CallSite` per
use of the accelerator: ``get_accelerator().<member>``, and ``<name>.<member>`` where
``<name>`` holds ``get_accelerator()`` (a local variable, ``self.<attribute>``, or a
parameter a caller passed ``get_accelerator()`` to). For each call it records what each
argument is (its *kind*: ``int``, ``str``, ``str (environment)``, ``torch.device``,
``None``, ``tensor``, ...) and how DeepSpeed uses the answer (``with``, ``.synchronize()``,
``torch.device(...)``, arithmetic, ...).

An argument's kind is decided by rules on the expression (literals, ``os.environ[...]``,
``int(...)``, ``x.device``, ...), then by the parameter (``on_accelerator(tensor)`` always
receives a tensor), then by :data:`AUDITED`: the expressions someone read DeepSpeed's code
for. An expression none of these decide is *unresolved*: the test that re-scans fails and
names it, so a new call site is audited before it is trusted.

    python -m tests.compat.deepspeed_call_sites            # summary of the installed DeepSpeed
    python -m tests.compat.deepspeed_call_sites --write    # rewrite tests/data/deepspeed-call-sites.json
    python -m tests.compat.deepspeed_call_sites --markdown # the table in docs/migrating-from-deepspeed.md
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "deepspeed-call-sites.json"

ENV = "str (environment)"
"""A string read from the environment (``os.environ["LOCAL_RANK"]``), passed on unconverted."""

PARAM_KINDS: dict[tuple[str, str], str] = {
    ("on_accelerator", "tensor"): "tensor",
    ("pin_memory", "tensor"): "tensor",
    ("pin_empty_like", "tensor"): "tensor",
    ("is_pinned", "tensor"): "tensor",
    ("unpin_memory", "tensor"): "tensor",
    ("pin_empty", "size"): "int",
    ("set_rng_state", "new_state"): "tensor",
    ("stream", "stream"): "stream or None",
    ("capture_to_graph", "graph"): "graph",
    ("capture_to_graph", "pool"): "graph pool",
    ("replay_graph", "graph"): "graph",
    ("lazy_call", "callback"): "callable",
    ("manual_seed", "seed"): "int",
    ("manual_seed_all", "seed"): "int",
    ("set_visible_devices_envs", "current_env"): "mapping",
    ("set_visible_devices_envs", "local_accelerator_ids"): "list",
    ("range_push", "msg"): "str",
    ("range_push", "domain"): "str",
    ("range_pop", "domain"): "str",
    ("pin_empty", "dtype"): "dtype",
    ("pin_empty_like", "dtype"): "dtype",
    ("register_host_memory", "address"): "int",
    ("register_host_memory", "num_bytes"): "int",
    ("unregister_host_memory", "address"): "int",
    ("get_op_builder", "class_name"): "str",
    ("create_op_builder", "class_name"): "str",
    ("FloatTensor", "#0"): "list",
    ("ByteTensor", "#0"): "list",
    ("IntTensor", "#0"): "list",
    ("HalfTensor", "#0"): "list",
    ("LongTensor", "#0"): "list",
    ("DoubleTensor", "#0"): "list",
    ("BFloat16Tensor", "#0"): "list",
}
"""Parameters whose argument kind DeepSpeed's interface fixes, whatever the expression."""

AUDITED: dict[str, dict[str, tuple[str, str]]] = {
    "comm/ccl.py": {"local_rank": ("int", "int(os.environ['LOCAL_RANK'])")},
    "comm/torch.py": {"local_rank": ("int", "int(os.environ['LOCAL_RANK'])")},
    "compile/profilers/comm_profile.py": {"local_rank": ("int", "int(os.environ['LOCAL_RANK'])")},
    "inference/engine.py": {"local_rank": ("int", "int(os.getenv('LOCAL_RANK', '0'))")},
    "inference/v2/engine_v2.py": {"local_rank": ("int", "int(os.getenv('LOCAL_RANK', 0))")},
    "launcher/launch.py": {"local_rank": ("int", "an index into the local ranks")},
    "module_inject/auto_ep_layer.py": {"device_index": ("int", "torch.cuda-style current_device()")},
    "nvme/ds_aio_handle.py": {"device_id": ("int", "the rank's device index")},
    "ops/transformer/transformer.py": {
        "self.config.local_rank": ("int", "the layer config's local_rank (called only when >= 0)")
    },
    "runtime/activation_checkpointing/checkpointing.py": {
        "cuda_device": ("str", "get_accelerator().current_device_name(), set just before (DeepSpeed 0.15 to 0.16)"),
        "idx": ("int", "device.index, else get_accelerator().current_device() (an int through the adapter)"),
        "device": (
            "int",
            "-1 (the current device) on PyTorch builds with torch._C._cuda_setRNGState, older than any "
            "accelhal supports; never reached here",
        ),
    },
    "runtime/comm/nccl.py": {
        "local_rank": ("int", "compressed_allreduce's device index, also given to cupy.cuda.Device (DeepSpeed 0.15)")
    },
    "runtime/engine.py": {
        "device_rank": ("int", "args.local_rank or self.local_rank, int(os.environ['LOCAL_RANK'])"),
        "self.local_rank": ("int", "int(os.environ['LOCAL_RANK'])"),
    },
    "runtime/pipe/module.py": {"self.local_rank": ("int", "int(os.environ.get('LOCAL_RANK'))")},
    "runtime/zero/partition_parameters.py": {
        "self.local_device": (
            "torch.device",
            "torch.device(get_accelerator().device_name(os.environ['LOCAL_RANK'])): torch.device('cpu'), "
            "without an index, on cpu",
        )
    },
    "runtime/zero/utils.py": {"local_rank": (ENV, "os.environ['LOCAL_RANK']")},
    "utils/groups.py": {"seed": ("int", "a seed")},
}
"""Expressions decided by reading DeepSpeed's code: by file (relative to the package) and text,
the kind and where the value comes from in that file."""

_RESULT_KINDS = {
    "current_stream": "stream or None",
    "default_stream": "stream or None",
    "Stream": "stream or None",
    "create_graph": "graph",
    "get_rng_state": "tensor",
    "device": "torch.device",
}
_MODULES = {"torch", "os", "deepspeed", "dist", "np"}
_TENSOR_FACTORIES = {"empty", "empty_like", "zeros", "zeros_like", "ones", "randint", "randn", "tensor", "cat"}
_TENSOR_METHODS = {"clone", "cpu", "to", "contiguous", "view", "narrow", "detach", "flatten", "float"}


@dataclasses.dataclass(frozen=True)
class Argument:
    """One argument at a call site: the parameter it binds, its source text, its kind."""

    param: str
    expr: str
    kind: str


@dataclasses.dataclass(frozen=True)
class CallSite:
    """One use of a member of DeepSpeed's accelerator in DeepSpeed's source."""

    file: str
    line: int
    member: str
    via: str
    access: str
    args: tuple[Argument, ...]
    use: str

    def as_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["args"] = [dataclasses.asdict(a) for a in self.args]
        return data


def deepspeed_root() -> Path:
    import deepspeed

    return Path(deepspeed.__file__).resolve().parent


def _is_get_accelerator(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "get_accelerator") or (
        isinstance(func, ast.Attribute) and func.attr == "get_accelerator"
    )


def _signature(member: str) -> inspect.Signature | None:
    from deepspeed.accelerator.abstract_accelerator import DeepSpeedAccelerator
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    for cls in (DeepSpeedAccelerator, CPU_Accelerator):
        value = inspect.getattr_static(cls, member, None)
        if isinstance(value, staticmethod):
            return inspect.signature(value.__func__)
        if inspect.isfunction(value):
            return inspect.signature(value)
    return None


def _param_names(member: str, access: str) -> list[str] | None:
    """Positional parameter names of ``member`` (None: not a method, arguments go to what it returns)."""
    signature = _signature(member) if access == "call" else None
    if signature is None:
        return None
    return [p.name for p in signature.parameters.values() if p.name != "self"]


class _GetattrAccess(ast.Attribute):
    """``getattr(accelerator, "name", default)``, seen as an attribute read of ``name``."""

    call: ast.Call


def _getattr_access(node: ast.AST, is_accelerator: Any) -> _GetattrAccess | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")):
        return None
    if len(node.args) < 2 or not is_accelerator(node.args[0]):
        return None
    name = node.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    access = _GetattrAccess(value=node.args[0], attr=name.value, ctx=ast.Load())
    access.lineno = node.lineno
    access.call = node
    return access


class _Module:
    """One DeepSpeed module: parent links, and the names that hold ``get_accelerator()``."""

    def __init__(self, path: Path, root: Path) -> None:
        self.rel = path.relative_to(root).as_posix()
        self.tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.functions = {n.name: n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef)}

    def enclosing(self, node: ast.AST, kinds: tuple[type, ...]) -> ast.AST | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, kinds):
                return node
        return None

    def holders(self) -> Iterator[tuple[ast.AST, str, str]]:
        """``(scope, dotted name, via)`` for every name bound to ``get_accelerator()``."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and _is_get_accelerator(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        scope = self.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or self.tree
                        yield scope, target.id, f"variable {target.id}"
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                        scope = self.enclosing(node, (ast.ClassDef,)) or self.tree
                        yield scope, ast.unparse(target), f"attribute {ast.unparse(target)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.functions:
                callee = self.functions[node.func.id]
                params = [a.arg for a in callee.args.args]
                for position, arg in enumerate(node.args):
                    if _is_get_accelerator(arg) and position < len(params):
                        yield callee, params[position], f"parameter {params[position]} of {callee.name}()"


def _holder_accesses(module: _Module) -> Iterator[tuple[ast.Attribute, str]]:
    seen: set[int] = set()
    for scope, name, via in module.holders():
        for node in ast.walk(scope):
            getattr_site = _getattr_access(node, lambda target, name=name: ast.unparse(target) == name)
            if getattr_site is not None:
                yield getattr_site, f"getattr() on {via}"
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) == name and id(node) not in seen:
                seen.add(id(node))
                yield node, via


def _classify(module: _Module, member: str, param: str, node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return "None" if node.value is None else type(node.value).__name__
    if isinstance(node, ast.JoinedStr):
        return "str"
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return "list"
    if isinstance(node, ast.Lambda):
        return "callable"
    text = ast.unparse(node)
    if text.startswith(("os.environ[", "os.environ.get(", "os.getenv(")):
        return ENV
    if isinstance(node, ast.Attribute) and node.attr == "device":
        return "torch.device"
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("int", "len"):
            return "int"
        if name in ("float", "str"):
            return name
        if text.startswith("torch.device("):
            return "torch.device"
        if text.startswith("torch.") and name in _TENSOR_FACTORIES:
            return "tensor"
        if isinstance(func, ast.Attribute) and name in _TENSOR_METHODS:
            return "tensor"
        if isinstance(func, ast.Attribute) and _is_get_accelerator(func.value) and name in _RESULT_KINDS:
            return _RESULT_KINDS[name]
    fixed = PARAM_KINDS.get((member, param))
    if fixed is not None:
        return fixed
    audited = AUDITED.get(module.rel, {}).get(text)
    if audited is not None:
        return audited[0]
    return "unresolved"


def _callee(func: ast.expr) -> str:
    """A call's function as the audit names it: ``torch.device``, or ``.to`` for a method of some value."""
    receiver = func.value if isinstance(func, ast.Attribute) else None
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    if isinstance(func, ast.Attribute) and not (isinstance(receiver, ast.Name) and receiver.id in _MODULES):
        return f".{func.attr}"
    return ast.unparse(func)


def _literal_kind(node: ast.expr) -> str:
    if isinstance(node, ast.Lambda):
        return "callable"
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return "value"
    return "None" if value is None else type(value).__name__


def _use(module: _Module, value: ast.AST) -> str:
    """How DeepSpeed uses the value of the access ``value`` (the call, or the attribute read)."""
    parent = module.parents.get(value)
    if isinstance(parent, ast.IfExp) and parent.test is not value:
        return _use(module, parent)  # a branch of a conditional expression: used as the whole is
    if isinstance(parent, ast.withitem):
        return "with"
    if isinstance(parent, ast.Expr):
        return "discarded"
    if isinstance(parent, ast.Attribute):
        return f".{parent.attr}"
    if isinstance(parent, ast.Subscript) and parent.value is value:
        return "subscript"
    if isinstance(parent, ast.Call):
        if parent.func is value:
            return "called"
        return f"argument of {_callee(parent.func)}()"
    if isinstance(parent, ast.keyword):
        call = module.parents.get(parent)
        func = _callee(call.func) if isinstance(call, ast.Call) else "?"
        return f"argument {parent.arg}= of {func}()"
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return "truth value"
    if isinstance(parent, (ast.BinOp, ast.AugAssign, ast.UnaryOp)):
        return "arithmetic"
    if isinstance(parent, ast.Compare) and isinstance(parent.ops[0], (ast.In, ast.NotIn)):
        return "membership container" if parent.left is not value else "membership item"
    if isinstance(parent, ast.Compare):
        others = [parent.left, *parent.comparators]
        kinds = sorted({_literal_kind(o) for o in others if o is not value})
        return f"compared with {'/'.join(kinds)}"
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.BoolOp, ast.Assert)):
        return "truth value"
    if isinstance(parent, ast.FormattedValue):
        return "formatted"
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        return "assigned"
    if isinstance(parent, (ast.Return, ast.Lambda)):
        return "returned"
    if isinstance(parent, (ast.List, ast.Tuple, ast.Dict, ast.Set)):
        return "in a collection"
    if isinstance(parent, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
        return "in a comprehension"
    if isinstance(parent, ast.For):
        return "iterated"
    if isinstance(parent, ast.arguments):
        return "default argument"
    if isinstance(parent, ast.arg):
        return "annotation"
    return type(parent).__name__.lower() if parent is not None else "?"


def _positional(member: str, names: list[str] | None, position: int) -> str:
    """The parameter a positional argument binds (``#<n>`` where the member is not a method)."""
    if names is None:
        return f"#{position}"
    signature = _signature(member)
    assert signature is not None
    for index, name in enumerate(names):
        if signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL or index == position:
            return name
    return f"#{position}"


def _site(module: _Module, node: ast.Attribute, via: str) -> CallSite:
    member = node.attr
    if isinstance(node, _GetattrAccess):
        call = node.call
        assert isinstance(call.func, ast.Name)
        return CallSite(module.rel, node.lineno, member, via, call.func.id, (), _use(module, call))
    parent = module.parents.get(node)
    called = isinstance(parent, ast.Call) and parent.func is node
    access = "call" if called else "write" if isinstance(node.ctx, ast.Store) else "read"
    if access == "write":
        assert isinstance(parent, ast.Assign)
        return CallSite(module.rel, node.lineno, member, via, access, (), f"set to {_literal_kind(parent.value)}")
    args: list[Argument] = []
    value: ast.AST = node
    if called:
        assert isinstance(parent, ast.Call)
        value = parent
        names = _param_names(member, access)
        for position, arg in enumerate(parent.args):
            param = _positional(member, names, position) if not isinstance(arg, ast.Starred) else "*"
            args.append(Argument(param, ast.unparse(arg), _classify(module, member, param, arg)))
        for keyword in parent.keywords:
            param = keyword.arg or "**"
            args.append(Argument(param, ast.unparse(keyword.value), _classify(module, member, param, keyword.value)))
    return CallSite(module.rel, node.lineno, member, via, access, tuple(args), _use(module, value))


def scan(root: Path | None = None) -> list[CallSite]:
    """Every access to the accelerator in DeepSpeed's source under ``root`` (the installed package)."""
    root = deepspeed_root() if root is None else root
    sites: list[CallSite] = []
    for path in sorted(root.rglob("*.py")):
        if "accelerator" not in path.read_text(encoding="utf-8"):
            continue
        module = _Module(path, root)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and _is_get_accelerator(node.value):
                sites.append(_site(module, node, "get_accelerator()"))
            getattr_site = _getattr_access(node, _is_get_accelerator)
            if getattr_site is not None:
                sites.append(_site(module, getattr_site, "getattr() on get_accelerator()"))
        for node, via in _holder_accesses(module):
            sites.append(_site(module, node, via))
    return sorted(sites, key=lambda s: (s.file, s.line, s.member))


def summary(sites: list[CallSite]) -> dict[str, Any]:
    """Per member: how often it is used, the kinds each parameter receives, and the uses of its answer."""
    members: dict[str, dict[str, Any]] = {}
    for site in sites:
        entry = members.setdefault(site.member, {"sites": 0, "access": set(), "arguments": {}, "uses": set()})
        entry["sites"] += 1
        entry["access"].add(site.access)
        entry["uses"].add(site.use)
        for arg in site.args:
            entry["arguments"].setdefault(arg.param, set()).add(arg.kind)
    kinds = sorted({a.kind for s in sites for a in s.args})
    return {
        "call_sites": len(sites),
        "files": len({s.file for s in sites}),
        "members": len(members),
        "argument_kinds": kinds,
        "by_member": {
            name: {
                "sites": entry["sites"],
                "access": sorted(entry["access"]),
                "arguments": {p: sorted(k) for p, k in sorted(entry["arguments"].items())},
                "uses": sorted(entry["uses"]),
            }
            for name, entry in sorted(members.items())
        },
    }


def document(sites: list[CallSite]) -> dict[str, Any]:
    """The audit as written to :data:`DATA`: the DeepSpeed version, the summary, every call site."""
    import deepspeed

    return {
        "deepspeed": deepspeed.__version__,
        "summary": summary(sites),
        "call_sites": [s.as_json() for s in sites],
    }


def markdown(summary_: dict[str, Any]) -> str:
    """The guide's table: every member DeepSpeed passes arguments to, its call sites, each parameter's kinds."""
    rows = ["| member | call sites | arguments received (parameter: kinds) |", "|---|---|---|"]
    for name, entry in summary_["by_member"].items():
        if entry["arguments"]:
            received = "; ".join(
                f"{'positional' if p.startswith('#') else f'`{p}`'}: {', '.join(kinds)}"
                for p, kinds in entry["arguments"].items()
            )
            rows.append(f"| `{name}` | {entry['sites']} | {received} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {DATA.name}")
    parser.add_argument("--markdown", action="store_true", help="print the migration guide's table")
    args = parser.parse_args()
    sites = scan()
    doc = document(sites)
    unresolved = [s for s in sites if any(a.kind == "unresolved" for a in s.args)]
    for site in unresolved:
        print(f"unresolved: {site.file}:{site.line} {site.member}({', '.join(a.expr for a in site.args)})")
    counts = collections.Counter(a.kind for s in sites for a in s.args)
    info = doc["summary"]
    print(f"{info['call_sites']} call sites in {info['files']} files, {info['members']} members; kinds: {dict(counts)}")
    if args.markdown:
        print(markdown(info))
    if args.write:
        DATA.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {DATA}")


if __name__ == "__main__":
    main()
