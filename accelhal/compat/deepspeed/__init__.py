"""DeepSpeed on accelhal, and DeepSpeed accelerators in accelhal (accelhal's ``deepspeed`` extra).

Public: :func:`install` (before ``import deepspeed``), ``as_deepspeed_accelerator`` and
``backend_from_deepspeed``. Importing this module imports neither DeepSpeed nor torch; the
functions do, when called (``backend_from_deepspeed`` with a ``"module:Class"`` path defers it
until the backend is selected). Nothing else in accelhal imports DeepSpeed. See
``docs/migrating-from-deepspeed.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from accelhal.compat.deepspeed import _targets
from accelhal.compat.deepspeed._own_import import DeepSpeedImportError, deepspeed_own_import
from accelhal.contract.spec import BackendSpec, Probe

if TYPE_CHECKING:
    from accelhal.compat.deepspeed._adapter import UnavailableBuilder
    from accelhal.compat.deepspeed._backend import DeepSpeedBackedAccelerator
    from accelhal.contract.accelerator import Accelerator

__all__ = [
    "DeepSpeedBackedAccelerator",
    "DeepSpeedImportError",
    "UnavailableBuilder",
    "as_deepspeed_accelerator",
    "backend_from_deepspeed",
    "install",
]

_LAZY = {
    "DeepSpeedBackedAccelerator": "accelhal.compat.deepspeed._backend",
    "UnavailableBuilder": "accelhal.compat.deepspeed._adapter",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def as_deepspeed_accelerator(acc: Accelerator | None = None, *, disable_ops: Iterable[str] = ()) -> Any:
    """An object ``deepspeed.accelerator.set_accelerator()`` accepts, delegating to ``acc``.

    Args:
        acc: the accelhal accelerator to delegate to; the active one
            (:func:`accelhal.get_accelerator`) when ``None``.
        disable_ops: names of DeepSpeed op builders (``"ShareMemCommBuilder"``, ...) to
            report as not buildable, so that DeepSpeed takes its pure-torch path instead
            of compiling the op. ``("ShareMemCommBuilder",)`` makes collectives on cpu go
            through gloo and skips a one-minute JIT build of DeepSpeed's shared-memory op.

    The result is an instance of a subclass of DeepSpeed's ``DeepSpeedAccelerator``
    generated from that class: every member DeepSpeed declares, with DeepSpeed's
    signature, forwarded to ``acc``. See ``docs/migrating-from-deepspeed.md`` for what
    each member answers.

    >>> ds_acc = as_deepspeed_accelerator()
    >>> ds_acc.device_name(), ds_acc._name
    ('cpu', 'cpu')
    """
    from accelhal.compat.deepspeed._adapter import wrap

    return wrap(acc, disable_ops)


def install(acc: Accelerator | str | None = None, *, disable_ops: Iterable[str] = ()) -> Any:
    """Make DeepSpeed use accelhal's accelerator; returns the adapter DeepSpeed now holds.

    ``acc`` (an instance or a backend name) also becomes accelhal's active accelerator,
    so DeepSpeed and code calling :func:`accelhal.get_accelerator` agree; ``None`` keeps
    accelhal's active one. ``disable_ops`` as in :func:`as_deepspeed_accelerator`.

    Called before ``import deepspeed``, it imports DeepSpeed with the adapter in place
    from DeepSpeed's first use of its accelerator: DeepSpeed's own detection never runs,
    and the op-builder classes DeepSpeed binds at import time
    (``deepspeed.ops.op_builder.CPUAdamBuilder``, ...) are the adapter's. Called after,
    it replaces DeepSpeed's accelerator for every later ``get_accelerator()`` call;
    what DeepSpeed captured at import time stays DeepSpeed's own.

    A DeepSpeed outside the supported releases (``SUPPORTED`` in
    ``accelhal.compat.deepspeed._releases``: 0.15.0 to 0.19.8 tested, 0.20 refused) raises
    :class:`~accelhal.UnsupportedReleaseError` naming it and the range, before anything is changed.
    """
    import sys

    from accelhal.compat.deepspeed._releases import SUPPORTED

    SUPPORTED.check()
    import accelhal
    from accelhal.compat.deepspeed import _hook
    from accelhal.errors import ContractError

    if acc is not None:
        acc = accelhal.set_accelerator(acc)
    from accelhal.compat.deepspeed._adapter import checked_ops

    ops = checked_ops(disable_ops)
    if _hook.TARGET in sys.modules:
        adapter = as_deepspeed_accelerator(acc, disable_ops=ops)
        with deepspeed_own_import():
            from deepspeed.accelerator import set_accelerator

        set_accelerator(adapter)
        return adapter
    _hook.arm(acc if acc is not None else accelhal.get_accelerator(), ops)
    try:
        with deepspeed_own_import():
            from deepspeed.accelerator import get_accelerator
    finally:
        _hook.disarm()
    from accelhal.compat.deepspeed._adapter import adapter_class

    adapter = get_accelerator()
    if not isinstance(adapter, adapter_class()):
        raise ContractError(f"DeepSpeed was imported without the adapter; it holds {adapter!r}")
    return adapter


def backend_from_deepspeed(
    deepspeed_class: type[Any] | str,
    *,
    name: str,
    priority: int,
    probe: Probe,
    device_type: str | None = None,
    **spec_options: Any,
) -> BackendSpec:
    """A :class:`~accelhal.BackendSpec` whose accelerator is DeepSpeed's ``deepspeed_class``.

    Args:
        deepspeed_class: a subclass of DeepSpeed's ``DeepSpeedAccelerator``, or its
            ``"module:Class"`` path (then neither DeepSpeed nor torch is imported until
            the backend is selected: keep plugin discovery cheap).
        name: the accelhal backend name (``ACCELHAL_ACCELERATOR=<name>``).
        priority: its place in the cascade (cpu is 100, cuda 300, xpu 900).
        probe: says whether the device is usable here, cheaply and without creating a
            device context; required because only the plugin knows how to check its
            device (DeepSpeed chose a backend as soon as its package imported).
        device_type: the ``torch.device`` type of its tensors; ``name`` when omitted.
        spec_options: further :class:`~accelhal.BackendSpec` fields (``comm_backend``,
            ``visible_devices_envs``, ``export_envs``, ``requires``, ``replaces``,
            ``description``). The identity fields must say what an instance of
            ``deepspeed_class`` answers (DeepSpeed's ``CPU_Accelerator``:
            ``visible_devices_envs=("CUDA_VISIBLE_DEVICES",)``); selection checks that
            they agree and names both values where they do not.

    The accelerator is a :class:`DeepSpeedBackedAccelerator`: every member is forwarded
    to an instance of ``deepspeed_class`` and normalised to accelhal's return types.
    """
    device_type = name if device_type is None else device_type
    if isinstance(deepspeed_class, str):
        module_name = deepspeed_class.partition(":")[0]
        spec_options.setdefault("requires", (module_name.split(".")[0],))
        spec_options.setdefault("description", f"DeepSpeed's {deepspeed_class}")
        spec = BackendSpec(
            name=name,
            device_type=device_type,
            priority=priority,
            accelerator=f"accelhal.compat.deepspeed._backend:WRAPPED.{name}",
            probe=probe,
            **spec_options,
        )
        known = _targets.register(name, deepspeed_class, device_type)
        if known != (deepspeed_class, device_type):
            raise ValueError(f"backend {name!r} is already registered for DeepSpeed's {known[0]}")
        return spec
    from accelhal.compat.deepspeed._backend import wrap_deepspeed_class

    cls = wrap_deepspeed_class(deepspeed_class, name, device_type)
    spec_options.setdefault("description", f"DeepSpeed's {deepspeed_class.__module__}.{deepspeed_class.__qualname__}")
    return BackendSpec(
        name=name, device_type=device_type, priority=priority, accelerator=cls, probe=probe, **spec_options
    )
