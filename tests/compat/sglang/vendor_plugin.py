"""A stand-in for a device vendor's own SGLang platform plugin (as sglang-kunlun is): it answers wherever installed."""

from __future__ import annotations

from pathlib import Path

from tests.compat.engines import install_distribution

QUALNAME = "tests.compat.sglang.vendor_plugin:VendorPlatform"


def activate() -> str:
    """The vendor plugin's function: its platform, always."""
    return QUALNAME


def __getattr__(name: str) -> type:
    """The vendor's platform class (SGLang's base ``SRTPlatform`` under another name), made when SGLang asks."""
    if name != "VendorPlatform":
        raise AttributeError(name)
    from sglang.srt.platforms.interface import SRTPlatform

    return type("VendorPlatform", (SRTPlatform,), {"device_name": "vendor"})


def install(site: Path) -> Path:
    """Lay out the vendor's distribution (as pip would) in ``site``, its entry point in ``sglang.srt.platforms``."""
    return install_distribution(site, "vendor-sglang", f"[sglang.srt.platforms]\nvendor = {__name__}:activate\n")
