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
from tests.plugin_sources import python_device
from tests.torch_features import needs_generic_backend

# fresh interpreters that import torch with a device of their own; the device is the generic backend's
pytestmark = [pytest.mark.slow, needs_generic_backend]

DEVICE = python_device("acmemem", "True", "1")


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
