"""A device whose runtime has no memory figures gets one verdict from every command.

``acmemem`` is a Python-only PrivateUse1 device (a ``torch.backends`` entry point, as vendor
packages register theirs) that sees one device but whose allocator is not torch's
``DeviceAllocator``: torch cannot say its total or free memory. That is a figure the runtime
does not have, not a fault: ``accelhal info`` shows the memory as unknown and exits 0, and
``accelhal doctor`` finds nothing wrong with the runtime's answers.
"""

from __future__ import annotations

import pytest

from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution

pytestmark = pytest.mark.slow  # fresh interpreters that import torch with a device of their own

DEVICE = """
import torch
from torch.utils import backend_registration


class Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self):
        return True

    def has_primary_context(self, index):
        return False

    def is_built(self):
        return True


class Module:
    def is_initialized(self):
        return False

    def is_available(self):
        return True

    def device_count(self):
        return 1

    def current_device(self):
        return 0

    def _is_in_bad_fork(self):
        return False

    def manual_seed_all(self, seed):
        pass


def register():
    backend_registration._setup_privateuseone_for_python_backend("acmemem", Module(), Hooks())
"""


def test_info_and_doctor_agree_that_missing_memory_figures_are_no_fault(
    install_distribution: InstallDistribution,
) -> None:
    site = install_distribution(
        "acme-mem", {"acme_mem": DEVICE}, {}, other_groups={"torch.backends": {"acmemem": "acme_mem:register"}}
    )
    env = {"PYTHONPATH": str(site.parent), "ACCELHAL_ACCELERATOR": "generic"}
    info = run_accelhal("info", "--json", env=env)
    assert info.returncode == 0, info.output
    data = info.json()
    assert data["accelerator"]["device_type"] == "acmemem", data
    (device,) = data["accelerator"]["devices"]
    assert (device["total_memory"], device["available_memory"]) == (None, None), device
    doctor = run_accelhal("doctor", "--json", env=env)
    codes = {problem["code"] for problem in doctor.json()["problems"]}
    assert "runtime-error" not in codes, doctor.output
