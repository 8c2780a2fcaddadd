"""SGLang runs in fresh processes: the engine, ``sglang.launch_server``, and their results, shared in a run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.compat import engines
from tests.compat.engines import run_module
from tests.compat.sglang import placement

BASE_ENV = {"TOKENIZERS_PARALLELISM": "false", "SGLANG_PLUGINS": ""}
"""No tokenizer threads; every general plugin SGLang finds."""

FORCED = {"ACCELHAL_SGLANG_PLATFORM": "on", "ACCELHAL_ACCELERATOR": "cpu"}
"""The bridge forced on cpu."""


def environment(*, site: Path | None = None, **env: str) -> dict[str, str]:
    """This process's environment without accelhal's selection variables, plus ``env``; ``site`` first on the path."""
    return engines.environment("ACCELHAL_SGLANG", BASE_ENV, site, **env)


def generate(model: Path, *options: str, sites: tuple[Path, ...] = (), **env: str) -> dict[str, Any]:
    """The result of ``tests.compat.sglang.generate`` for ``model``, with ``"placement"``: each model runner's."""
    environ = environment(**env)
    environ["PYTHONPATH"] = os.pathsep.join([*map(str, sites), environ["PYTHONPATH"]])
    placed = Path(environ.get(placement.PLACEMENT_FILE, ""))
    done = run_module(["tests.compat.sglang.generate", str(model), *options], environ)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            if placed.name:
                result["placement"] = [json.loads(row) for row in placed.read_text().splitlines()]
            return result
    pytest.fail(f"SGLang produced no result (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-8000:]}")
