"""vLLM runs in fresh processes: the engine, ``vllm serve``, and their results, shared between a run's workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.compat import engines
from tests.compat.engines import device_site, install_distribution, kill_group, run_code, run_module
from tests.compat.vllm.models import build
from tests.sharing import RunCache

__all__ = ["device_site", "install_distribution", "kill_group", "run_code", "run_module"]

BASE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING", "TOKENIZERS_PARALLELISM": "false"}
"""A 1 GiB KV cache, and only vLLM's warnings."""


def environment(*, site: Path | None = None, **env: str) -> dict[str, str]:
    """This process's environment without accelhal's selection variables, plus ``env``; ``site`` first on the path."""
    return engines.environment("ACCELHAL_VLLM", BASE_ENV, site, **env)


def generate(model: Path, *options: str, site: Path | None = None, **env: str) -> dict[str, Any]:
    """The result line of ``tests.compat.vllm.generate`` for ``model``: its tokens, platform and devices."""
    done = run_module(["tests.compat.vllm.generate", str(model), *options], environment(site=site, **env))
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]
    pytest.fail(f"vLLM produced no result (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-8000:]}")


def model_directory(run_cache: RunCache, architecture: str) -> Path:
    """The tiny ``architecture`` model, built once per run."""
    return build(architecture, run_cache.directory(f"vllm-model-{architecture}", lambda d: build(architecture, d)))


def reference(run_cache: RunCache, model: Path, *options: str) -> dict[str, Any]:
    """vLLM's own CpuPlatform's result for ``model`` and ``options``, computed once per run."""
    name = "vllm-reference-" + "-".join([model.name, *options]).replace("--", "").replace("/", "_")

    def compute(directory: Path) -> None:
        (directory / "result.json").write_text(json.dumps(generate(model, *options)))

    return json.loads((run_cache.directory(name, compute) / "result.json").read_text())  # type: ignore[no-any-return]
