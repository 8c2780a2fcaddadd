"""accelhal: one accelerator API for PyTorch, whatever the machine has.

>>> import accelhal
>>> accelhal.get_accelerator().name   # on a machine without accelerators
'cpu'

``import accelhal`` is free of side effects: it imports no torch, vendor package, pydantic, pluggy or rich, writes no
environment variable and creates no device context. Marked PYTEST_DONT_REWRITE (why: ``docs/contributing.md``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelhal import distributed
    from accelhal._version import __version__
    from accelhal.contract.accelerator import Accelerator
    from accelhal.contract.compile_backend import CompileChoice
    from accelhal.contract.device_module import DeviceModuleAccelerator
    from accelhal.contract.spec import CONTRACT_VERSION, BackendSpec, Capability, Status, Verdict
    from accelhal.discovery.hooks import hookimpl
    from accelhal.errors import (
        AccelhalError,
        BackendUnavailableError,
        CompileBackendError,
        ConfigurationError,
        ContractError,
        DistributedSetupError,
        PluginError,
        RankLostError,
        UnknownBackendError,
        UnsupportedFeatureError,
        UnsupportedReleaseError,
    )
    from accelhal.report import AcceleratorInfo, DetectionReport
    from accelhal.selection import detect, get_accelerator, reset_accelerator, set_accelerator

_EXPORTS: dict[str, str] = {
    "__version__": "accelhal._version",
    "get_accelerator": "accelhal.selection",
    "set_accelerator": "accelhal.selection",
    "reset_accelerator": "accelhal.selection",
    "detect": "accelhal.selection",
    "Accelerator": "accelhal.contract.accelerator",
    "DeviceModuleAccelerator": "accelhal.contract.device_module",
    "BackendSpec": "accelhal.contract.spec",
    "Verdict": "accelhal.contract.spec",
    "Status": "accelhal.contract.spec",
    "Capability": "accelhal.contract.spec",
    "CONTRACT_VERSION": "accelhal.contract.spec",
    "CompileChoice": "accelhal.contract.compile_backend",
    "hookimpl": "accelhal.discovery.hooks",
    "DetectionReport": "accelhal.report",
    "AcceleratorInfo": "accelhal.report",
    "AccelhalError": "accelhal.errors",
    "ConfigurationError": "accelhal.errors",
    "UnknownBackendError": "accelhal.errors",
    "BackendUnavailableError": "accelhal.errors",
    "PluginError": "accelhal.errors",
    "ContractError": "accelhal.errors",
    "UnsupportedFeatureError": "accelhal.errors",
    "UnsupportedReleaseError": "accelhal.errors",
    "DistributedSetupError": "accelhal.errors",
    "CompileBackendError": "accelhal.errors",
    "RankLostError": "accelhal.errors",
}

_SUBMODULES = ("distributed",)
"""Subpackages reachable as attributes (``accelhal.distributed``), imported on first access."""

__all__ = [
    "__version__",
    "get_accelerator",
    "set_accelerator",
    "reset_accelerator",
    "detect",
    "Accelerator",
    "DeviceModuleAccelerator",
    "BackendSpec",
    "Verdict",
    "Status",
    "Capability",
    "CONTRACT_VERSION",
    "CompileChoice",
    "hookimpl",
    "DetectionReport",
    "AcceleratorInfo",
    "AccelhalError",
    "ConfigurationError",
    "UnknownBackendError",
    "BackendUnavailableError",
    "PluginError",
    "ContractError",
    "UnsupportedFeatureError",
    "UnsupportedReleaseError",
    "DistributedSetupError",
    "CompileBackendError",
    "RankLostError",
    "distributed",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"accelhal.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'accelhal' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
