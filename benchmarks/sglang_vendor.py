"""What a vendor writes by hand today: a minimal out-of-tree SGLang platform for the host, the benchmark's baseline.

Device type ``cpu``, SGLang's ``torch_native`` attention, memory from psutil, ``gloo``: the ~60
lines that make SGLang's own engine generate here (``docs/sglang.md``), with no accelhal in it.
:func:`install` lays it out as a distribution in SGLang's ``sglang.srt.platforms`` group, named
``hand`` (``SGLANG_PLATFORM=hand`` chooses it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil
import torch
from sglang.srt.platforms.device_mixin import PlatformEnum
from sglang.srt.platforms.interface import SRTPlatform

from tests.compat.engines import install_distribution


class HandWrittenPlatform(SRTPlatform):  # type: ignore[misc]
    """The host as a vendor's own SGLang platform plugin describes it."""

    _enum = PlatformEnum.OOT
    device_name = "cpu"
    device_type = "cpu"

    def get_device(self, device_id: int | None = 0) -> str:
        return "cpu"

    def set_device(self, device: Any) -> None:
        pass

    def get_device_name(self, device_id: int = 0) -> str:
        return "cpu"

    def get_device_uuid(self, device_id: int = 0) -> str:
        return "cpu"

    def get_device_capability(self, device_id: int = 0) -> None:
        return None

    def get_device_total_memory(self, device_id: int = 0) -> int:
        return int(psutil.virtual_memory().total)

    def get_current_memory_usage(self, device: Any = None) -> float:
        memory = psutil.virtual_memory()
        return float(memory.total - memory.available)

    def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
        memory = psutil.virtual_memory()
        return memory.available, memory.total

    def get_default_attention_backend(self) -> str:
        return "torch_native"

    def get_torch_distributed_backend_str(self) -> str:
        return "gloo"

    def get_dispatch_key_name(self) -> str:
        return "native"

    def get_torch_profiler_activity(self) -> torch.profiler.ProfilerActivity:
        return torch.profiler.ProfilerActivity.CPU


def activate() -> str:
    """The plugin's ``activate()``: its platform, always."""
    return f"{__name__}:HandWrittenPlatform"


def install(site: Path) -> Path:
    """Lay out the plugin's distribution (as pip would) in ``site``."""
    return install_distribution(site, "hand-sglang", f"[sglang.srt.platforms]\nhand = {__name__}:activate\n")
