"""A general SGLang plugin for the tests: it writes where each model runner's weights and KV cache live.

Installed as a distribution in SGLang's ``sglang.srt.plugins`` group (:func:`install`); in each
SGLang process it hooks ``ModelRunner.alloc_memory_pool`` (after it) and appends one JSON line to the file
``PLACEMENT_FILE`` names. It reads what SGLang built; it changes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.compat.engines import install_distribution

PLACEMENT_FILE = "TESTS_SGLANG_PLACEMENT"
"""The variable naming the file the plugin appends to."""


def _record(result: Any, runner: Any, *args: Any, **kwargs: Any) -> None:
    pool = runner.token_to_kv_pool
    line = {
        "weights": str(next(runner.model.parameters()).device),
        "kv_cache": str(pool.get_key_buffer(0).device),
        "device": str(runner.device),
        "runner": type(runner).__name__,
    }
    with open(os.environ[PLACEMENT_FILE], "a") as out:
        out.write(json.dumps(line) + "\n")


def register() -> None:
    """The plugin's function: hook ``ModelRunner.alloc_memory_pool`` where the placement file is named."""
    if not os.environ.get(PLACEMENT_FILE):
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    HookRegistry.register(
        "sglang.srt.model_executor.model_runner.ModelRunner.alloc_memory_pool", _record, HookType.AFTER
    )


def install(site: Path) -> Path:
    """Lay out the plugin's distribution (as pip would) in ``site``."""
    return install_distribution(site, "placement-sglang", f"[sglang.srt.plugins]\nplacement = {__name__}:register\n")
