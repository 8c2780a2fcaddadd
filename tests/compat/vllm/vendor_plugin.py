"""A stand-in for a device vendor's own vLLM platform plugin (as vllm-ascend is): it answers wherever installed."""

from __future__ import annotations

from pathlib import Path

from vllm.platforms.cpu import CpuPlatform

from tests.compat.vllm.runs import install_distribution

QUALNAME = "tests.compat.vllm.vendor_plugin.VendorPlatform"


class VendorPlatform(CpuPlatform):
    """The vendor's platform (vLLM's CPU platform under another name)."""


def probe() -> str:
    """The vendor plugin's function: its platform, always."""
    return QUALNAME


def install(site: Path) -> Path:
    """Lay out the vendor's distribution (as pip would) in ``site``, its entry point in ``vllm.platform_plugins``."""
    return install_distribution(site, "vendor-vllm", f"[vllm.platform_plugins]\nvendor = {__name__}:probe\n")
