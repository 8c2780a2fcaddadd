"""What the torch under test has, for the tests that need more than accelhal's oldest supported torch.

Each marker skips with this torch's version and the release that brought the feature, so a run
on an old torch says what it left out (``docs/support.md`` lists them per release).
"""

from __future__ import annotations

import pytest
import torch

from accelhal.contract.probes import GENERIC_OLDEST_TORCH

VERSION = torch.__version__

CPU_ONLY_BUILD = torch.version.cuda is None and torch.version.hip is None
"""Whether this torch is a CPU-only build (the package index's default builds carry CUDA)."""


def _needs(present: bool, feature: str, since: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not present, reason=f"torch {VERSION} has no {feature} (torch >= {since})")


needs_device_autoload = _needs(
    hasattr(torch, "_import_device_backends"),
    "device autoload ('import torch' runs torch.backends entry points)",
    "2.5",
)
needs_torch_accelerator = _needs(hasattr(torch, "accelerator"), "torch.accelerator", "2.6")
lacks_torch_accelerator = pytest.mark.skipif(
    hasattr(torch, "accelerator"), reason=f"torch {VERSION} has torch.accelerator (the test is of a torch before 2.6)"
)
reports_no_accelerator = pytest.mark.skipif(
    not hasattr(torch, "accelerator") or not CPU_ONLY_BUILD,
    reason=f"torch {VERSION} reports an accelerator without a device, or has no torch.accelerator: a CUDA build "
    "reports 'cuda' (the generic backend then finds it served by the cuda backend: explain's 'replaced', tested on "
    "the test device renamed 'npu')",
)
"""For a test of a torch that names no accelerator on this GPU-less machine: the CPU build from 2.6."""
needs_accelerator_memory_info = _needs(
    hasattr(getattr(torch, "accelerator", None), "get_memory_info"),
    "torch.accelerator.get_memory_info and get_device_capability",
    "2.10",
)
needs_generic_backend = pytest.mark.skipif(
    VERSION < GENERIC_OLDEST_TORCH,  # a TorchVersion: compared as a release
    reason=f"the generic backend needs torch >= {GENERIC_OLDEST_TORCH}; this is torch {VERSION}",
)
needs_gloo_teardown_after_restart = pytest.mark.skipif(
    VERSION < "2.9",
    reason=f"torch {VERSION}'s gloo can hang in destroy_process_group in a group torchrun restarted "
    "(seen on 2.4.1 and 2.6.0, never on 2.9.1; docs/support.md)",
)
