"""An accelhal plugin that gives the test device a vLLM kit (``accelhal_vllm_kit``), as a vendor would."""

from __future__ import annotations

from pathlib import Path

from accelhal import hookimpl
from accelhal.compat.vllm import VllmKit
from tests.compat.vllm.runs import install_distribution

KIT = VllmKit(
    attention_backend="tests.compat.vllm.kit_plugin.Attention",
    kernels=("tests.compat.vllm.kit_kernels",),
    device_communicator="tests.compat.vllm.kit_plugin.Communicator",
    punica_wrapper="tests.compat.vllm.kit_plugin.Punica",
)


@hookimpl
def accelhal_vllm_kit(backend: str) -> VllmKit | None:
    """The kit for the test device; nothing for any other backend."""
    return KIT if backend == "testdev" else None


def install(site: Path) -> Path:
    """Lay out the plugin's distribution in ``site`` (its entry point in the ``accelhal`` group)."""
    return install_distribution(site, "testdev-vllm-kit", f"[accelhal]\ntestdev_kit = {__name__}\n")
