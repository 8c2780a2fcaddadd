"""DeepSpeed's accelerator vocabulary, read from the installed ``DeepSpeedAccelerator``.

Both directions of the bridge are generated from this one reading, so a member that a
later DeepSpeed adds to its abstract class is picked up without a code change here.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


@functools.cache
def deepspeed_base() -> type[Any]:
    """DeepSpeed's abstract ``DeepSpeedAccelerator`` (importing it imports the ``deepspeed`` package)."""
    from accelhal.compat.deepspeed._own_import import deepspeed_own_import

    with deepspeed_own_import():
        from deepspeed.accelerator.abstract_accelerator import DeepSpeedAccelerator

    cls: type[Any] = DeepSpeedAccelerator
    return cls


def deepspeed_members() -> dict[str, str]:
    """Every member ``DeepSpeedAccelerator`` declares, by name, with its kind.

    The kind is ``"method"``, ``"property"``, ``"static"`` or ``"attribute"`` (a plain
    class attribute such as ``supports_nvtx_domain``). Dunder names are left out.
    """
    kinds: dict[str, str] = {}
    for name, member in vars(deepspeed_base()).items():
        if name.startswith("__") or name == "_abc_impl":
            continue
        if isinstance(member, property):
            kinds[name] = "property"
        elif isinstance(member, (staticmethod, classmethod)):
            kinds[name] = "static"
        elif inspect.isfunction(member):
            kinds[name] = "method"
        else:
            kinds[name] = "attribute"
    return kinds


def deepspeed_signature(name: str) -> inspect.Signature:
    """The signature DeepSpeed declares for method ``name``.

    Where DeepSpeed's abstract class leaves a parameter without a default that accelhal's
    contract (and every one of DeepSpeed's own backends) defaults - ``device_name`` and
    ``device``'s ``device_index=None`` - the default is added, so every call that is valid
    against DeepSpeed's class stays valid and ``device_name()`` works as DeepSpeed's code
    calls it.
    """
    from accelhal.contract.accelerator import Accelerator

    declared = inspect.signature(getattr(deepspeed_base(), name))
    ours = getattr(Accelerator, name, None)
    if not inspect.isfunction(ours):
        return declared
    our_params = inspect.signature(ours).parameters
    params = []
    for param in declared.parameters.values():
        mine = our_params.get(param.name)
        if param.default is inspect.Parameter.empty and mine is not None and mine.default is not mine.empty:
            param = param.replace(default=mine.default)
        params.append(param)
    return declared.replace(parameters=params)
