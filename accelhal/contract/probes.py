"""Probe a backend built on a torch device module: is it installed, does it load, does it see a device.

:func:`device_module_probe` makes the probe a :class:`~accelhal.BackendSpec` names. Fork safety: a
probe never creates a device context, so a process forked after it can still use the device.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from types import ModuleType

from accelhal.contract.verdict import Probe, Verdict


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def import_device_module(package: str, module: str) -> ModuleType:
    """Import ``package`` (which registers the device module), then return ``module``.

    Errors propagate: callers decide whether they are a verdict or an exception.
    """
    if package != module:
        importlib.import_module(package)
    return importlib.import_module(module)


def probe_device_module(package: str, module: str, hint: str, count: str = "device_count") -> Verdict:
    """Probe a backend whose devices are counted by ``<module>.<count>()``.

    A missing top-level package is :attr:`~accelhal.Status.NOT_INSTALLED` (found with
    ``importlib.util.find_spec``: nothing is imported). A package that fails to load, whatever
    it raises, is :attr:`~accelhal.Status.BROKEN`, with the exception as the reason. No device
    counted is :attr:`~accelhal.Status.NO_DEVICE`, without ``hint`` (the runtime loaded) unless
    the module says torch was built without it (``torch.cuda._is_compiled()`` False).

    Args:
        package: what must be installed and imported first (``"torch_npu"``, ``"torch"``).
        module: the dotted device module (``"torch.npu"``, ``"torch.cuda"``).
        hint: what to do when the package is missing or broken (not when it loads and sees no
            device: selection then names the backend's :attr:`~accelhal.BackendSpec.device_check_command`).
        count: the module's device-counting function, which must not initialise the runtime
            (``torch.cuda.device_count()`` asks NVML and leaves ``torch.cuda.is_initialized()`` False).
    """
    top = package.partition(".")[0]
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError) as exc:
        return Verdict.broken(f"looking up {top!r} failed: {_describe(exc)}", hint=hint)
    if not found:
        return Verdict.not_installed(f"{top!r} is not installed", hint=hint)
    try:
        device_module = import_device_module(package, module)
    except Exception as exc:  # a vendor stack can fail to load in any way
        return Verdict.broken(f"import {package} failed: {_describe(exc)}", hint=hint)
    try:
        devices = int(getattr(device_module, count)())
    except Exception as exc:
        return Verdict.broken(f"{module}.{count}() failed: {_describe(exc)}", hint=hint)
    if devices <= 0:
        reason = f"{package} loads but {module}.{count}() is 0"
        compiled = getattr(device_module, "_is_compiled", None)  # torch.cuda/torch.xpu of a torch built without them
        if callable(compiled) and not compiled():
            return Verdict.no_device(reason, hint=f"this torch is built without {module}: {hint}")
        return Verdict.no_device(reason)  # the runtime loaded: the hint on making it load does not apply
    return Verdict.available(f"{devices} device(s) visible to {module}")


GENERIC_OLDEST_TORCH = "2.10"
"""The oldest torch whose ``torch.accelerator`` has every function the generic backend calls
(``accelhal_backends.generic.TORCH_ACCELERATOR_CALLS``): ``torch.accelerator`` arrived in 2.6, the last
of them in 2.10. The generic backend's verdict names it where one is missing, selection where torch has
no ``torch.accelerator`` at all."""


def torch_accelerator_type() -> str | None:
    """Return the device type ``torch.accelerator.current_accelerator()`` reports, or ``None``.

    Imports torch; creates no device context. ``None`` where torch has no ``torch.accelerator``
    (older than 2.6) or reports no accelerator (torch 2.6's ``current_accelerator()`` raises
    there; later ones return ``None``).
    """
    import inspect

    import torch

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:  # torch older than 2.6
        return None
    try:
        device = accelerator.current_accelerator()
    except RuntimeError:  # torch 2.6's raises where no accelerator is available (later ones answer)
        if "check_available" in inspect.signature(accelerator.current_accelerator).parameters:
            raise
        return None
    return None if device is None else str(device.type)


def device_module_probe(package: str, module: str, hint: str, count: str = "device_count") -> Probe:
    """Return a zero-argument probe (for :attr:`accelhal.BackendSpec.probe`) running :func:`probe_device_module`.

    For a backend whose runtime registers ``torch.mydev``::

        probe = device_module_probe("my_runtime", "torch.mydev", hint="install the mydev driver")
        probe()   # Verdict(status=<Status.NOT_INSTALLED ...>, ...) where my_runtime is missing
    """
    return functools.partial(probe_device_module, package, module, hint, count)
