"""Which attributes of its vendor device module a backend class touches, read from its source (AST).

A backend reaches its module as ``self._m`` (the device module) and ``self._rng`` (the
module's RNG namespace); the members it binds directly are listed by
``DeviceModuleAccelerator.bound_members()``. What the class looks for before using it
(``device_module.LOOKED_FOR``, the range modules) is left out. Only the methods the class really resolves to
are read (an override hides the base method it replaces), so the result is what this
backend calls, not what its neighbours call.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from accelhal.contract.device_module import LOOKED_FOR, RANGE_MODULES, DeviceModuleAccelerator


def _chain(node: ast.expr, aliases: dict[str, list[str]]) -> list[str] | None:
    """``self._m.random.get_rng_state`` -> ``["_m", "random", "get_rng_state"]`` (rooted at ``self``).

    ``aliases`` maps local names to what they stand for (``m = self._m`` gives ``{"m": ["_m"]}``).
    """
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self":
        return parts[::-1]
    if isinstance(node, ast.Name) and node.id in aliases:
        return aliases[node.id] + parts[::-1]
    return None


def _accessed(func: object) -> set[tuple[str, ...]]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))  # type: ignore[arg-type]
    aliases: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            chain = _chain(node.value, {})
            if chain and chain[0] in ("_m", "_rng"):
                aliases[node.targets[0].id] = chain
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _chain(node, aliases)
            if chain and chain[0] in ("_m", "_rng") and len(chain) > 1:
                found.add(tuple(chain))
    return found


def vendor_attributes(cls: type[DeviceModuleAccelerator]) -> set[str]:
    """Dotted names, relative to the device module, that ``cls`` uses (``"random.get_rng_state"``)."""
    rng_prefix = () if cls._rng_namespace is None else (cls._rng_namespace,)
    names: set[str] = set()
    for attr in dir(cls):
        member = inspect.getattr_static(cls, attr)
        func = member.fget if isinstance(member, property) else member
        func = getattr(func, "__func__", func)
        if not inspect.isfunction(func):
            continue
        for chain in _accessed(func):
            # keep the first attribute below the module (deeper ones are members of what it returns)
            rooted = (*rng_prefix, *chain[1:]) if chain[0] == "_rng" else chain[1:]
            names.add(".".join(rooted[: 2 if rooted[0] == cls._rng_namespace else 1]))
    for name, where in cls.bound_members().items():
        names.add(name if where == "_m" or cls._rng_namespace is None else f"{cls._rng_namespace}.{name}")
    # found by looking: used only where the module has them, so they need not be in every surface
    return names - set(LOOKED_FOR) - set(RANGE_MODULES)
