"""Probes for backends built on a torch device module, parametrised by names (no vendor is named here).

A probe answers one question cheaply and honestly: can this backend be used here? The
steps, in order:

1. ``importlib.util.find_spec`` on the top-level package: nothing is imported when the
   package is missing (:attr:`~accelhal.Status.NOT_INSTALLED`).
2. Import the vendor package and the device module. A package that is installed but fails
   to load (``ImportError: libhccl.so ...``, ``OSError`` from a missing driver library,
   anything else it raises) is :attr:`~accelhal.Status.BROKEN`, with the exception as the
   reason and a hint; selection then goes on to the next backend.
3. Count devices with the module's counting function. Zero is
   :attr:`~accelhal.Status.NO_DEVICE`: "the package imports" is never taken for "a device
   is there". Its verdict has no hint of its own (the runtime loaded, so the hint on
   making it load does not apply; selection names the backend's device check command),
   unless the module says torch was built without it (``torch.cuda._is_compiled()`` is
   False on a CPU build): then the hint is the one on installing the runtime.

A probe never creates a device context. The counting function must be one that does not
initialise the runtime (``torch.cuda.device_count()`` asks NVML, so
``torch.cuda.is_initialized()`` stays False and a forked child can still use the GPU).

Example, the probe of a backend whose runtime registers ``torch.mydev``::

    probe = device_module_probe("my_runtime", "torch.mydev", hint="install the mydev driver")
    probe()   # Verdict(status=<Status.NOT_INSTALLED ...>, ...) where my_runtime is missing
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

    Args:
        package: what must be installed and imported first (``"torch_npu"``, ``"torch"``).
        module: the dotted device module (``"torch.npu"``, ``"torch.cuda"``).
        hint: what to do when the package is missing or broken (not when it loads and sees no
            device: selection then names the backend's :attr:`~accelhal.BackendSpec.device_check_command`).
        count: the module's device-counting function, which must not initialise the runtime.
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
    """The device type ``torch.accelerator.current_accelerator()`` reports, or ``None``; creates no device context.

    Imports torch. ``None`` where torch has no ``torch.accelerator`` (older than 2.6) or reports
    no accelerator (torch 2.6's ``current_accelerator()`` raises there; later ones return ``None``).
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
    """A zero-argument probe (for :attr:`accelhal.BackendSpec.probe`) running :func:`probe_device_module`."""
    return functools.partial(probe_device_module, package, module, hint, count)
