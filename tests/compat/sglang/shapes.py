"""The shape of the installed SGLang's ``SRTPlatform``: its members and capability flags.

``python -m tests.compat.sglang.shapes`` records the installed release's shape into
``tests/data/sglang-shapes.json`` (one entry per release; run it in each supported release's venv).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang-shapes.json"


def platform_members() -> set[str]:
    """Every member of ``SRTPlatform``: its attributes and methods, and the dunders SGLang's classes define."""
    from sglang.srt.platforms.interface import SRTPlatform

    names = {name for name in dir(SRTPlatform) if not (name.startswith("__") and name.endswith("__"))}
    for kind in SRTPlatform.__mro__:
        if kind.__module__.startswith("sglang"):
            names |= {n for n, v in vars(kind).items() if n.startswith("__") and n.endswith("__") and callable(v)}
    return names - {"__init__", "__init_subclass__", "__subclasshook__"}


def shape() -> dict[str, Any]:
    """The installed release's shape: ``{"platform": [members], "capabilities": [flags]}``."""
    from sglang.srt.platforms.interface import PlatformCapabilities

    return {"platform": sorted(platform_members()), "capabilities": list(PlatformCapabilities.__struct_fields__)}


def main() -> None:
    from importlib import metadata

    recorded = json.loads(DATA.read_text()) if DATA.exists() else {}
    recorded[metadata.version("sglang")] = shape()
    DATA.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")


if __name__ == "__main__":
    main()
