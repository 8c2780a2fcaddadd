"""Source text of small third-party plugins, installed by the ``install_distribution`` fixture."""

from __future__ import annotations


def backend_plugin(
    name: str,
    priority: int = 500,
    probe_body: str = "return Verdict.available('simulated device present')",
    class_body: str = "pass",
    spec_extra: str = "",
    module_prelude: str = "",
) -> str:
    """A plugin module registering one cpu-backed backend called ``name``."""
    return f"""
from accelhal import BackendSpec, Verdict, hookimpl
from accelhal_backends.cpu.accelerator import CpuAccelerator
{module_prelude}

class {name.capitalize()}Accelerator(CpuAccelerator):
    _name = "{name}"
    {class_body}

def probe():
    {probe_body}

@hookimpl
def accelhal_register_backends(register):
    register(BackendSpec(name="{name}", device_type="cpu", priority={priority},
                         accelerator={name.capitalize()}Accelerator, probe=probe{spec_extra}))
"""


CUDA_SHIM = '''
"""Make torch.cuda answer for acme's devices, as torch_npu's transfer_to_npu does (at import)."""
import torch


def device_count():
    return 2


def is_available():
    return True


torch.cuda.device_count = device_count
torch.cuda.is_available = is_available


def autoload():
    """torch's device-backend autoload entry point (``torch.backends``): importing did the work."""
'''
"""A package that replaces ``torch.cuda.device_count``/``is_available`` when imported; its
``autoload`` is a ``torch.backends`` entry point, so ``import torch`` imports it (as torch_supa's is)."""


def python_device(name: str, available: str, count: str, prelude: str = "") -> str:
    """A Python-only PrivateUse1 device ``name`` for a ``torch.backends`` entry point (``<module>:register``).

    ``available`` and ``count`` are the bodies' expressions for ``is_available()`` and
    ``device_count()`` (``"True"``, ``"1"``, or a call of a function ``prelude`` defines).
    """
    return f"""
import torch
from torch.utils import backend_registration
{prelude}

class Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self):
        return {available}

    def has_primary_context(self, index):
        return False

    def is_built(self):
        return True


class Module:
    def is_initialized(self):
        return False

    def is_available(self):
        return {available}

    def device_count(self):
        return {count}

    def current_device(self):
        return 0

    def _is_in_bad_fork(self):
        return False

    def manual_seed_all(self, seed):
        pass


def register():
    backend_registration._setup_privateuseone_for_python_backend({name!r}, Module(), Hooks())
"""
