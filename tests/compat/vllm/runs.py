"""vLLM runs in fresh processes: the engine, ``vllm serve``, and their results, shared between a run's workers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.compat.vllm.models import build
from tests.distributions import lay_out
from tests.privateuse1.child import write_autoload_distribution
from tests.sharing import RunCache
from tests.simulation import CLEAN, ROOT

RUN_SECONDS = 600.0
"""One engine's limit: start-up takes 20 to 120 s on two busy cores."""

BASE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING", "TOKENIZERS_PARALLELISM": "false"}
"""A 1 GiB KV cache, and only vLLM's warnings."""


def environment(*, site: Path | None = None, **env: str) -> dict[str, str]:
    """This process's environment without accelhal's selection variables, plus ``env``; ``site`` first on the path."""
    environ = {k: v for k, v in os.environ.items() if k not in CLEAN and not k.startswith("ACCELHAL_VLLM")}
    environ.update(BASE_ENV)
    environ["PYTHONPATH"] = os.pathsep.join([*([str(site)] if site else []), str(ROOT)])
    environ.update(env)
    return environ


def kill_group(process: subprocess.Popen[str]) -> tuple[str, str]:
    """End ``process`` and every process it started (its own session); what it printed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.communicate()


def run_module(
    args: list[str], env: dict[str, str], timeout: float = RUN_SECONDS, prefix: tuple[str, ...] | list[str] = ("-m",)
) -> subprocess.CompletedProcess[str]:
    """``python -m ARGS`` (or ``python PREFIX ARGS``) in its own session, killed with its children past ``timeout``."""
    command = [sys.executable, *prefix, *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = kill_group(process)
            pytest.fail(f"{' '.join(args)} ran past {timeout:g} s; its output:\n{stdout[-3000:]}\n{stderr[-6000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def run_code(code: str, env: dict[str, str], timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in its own session (see :func:`run_module`)."""
    return run_module([code], env, timeout, prefix=["-c"])


def generate(model: Path, *options: str, site: Path | None = None, **env: str) -> dict[str, Any]:
    """The result line of ``tests.compat.vllm.generate`` for ``model``: its tokens, platform and devices."""
    done = run_module(["tests.compat.vllm.generate", str(model), *options], environment(site=site, **env))
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]
    pytest.fail(f"vLLM produced no result (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-8000:]}")


def install_distribution(site: Path, name: str, entry_points: str) -> Path:
    """Lay out, as pip does, a distribution ``name`` 1.0 in ``site`` whose ``entry_points.txt`` is ``entry_points``."""
    lay_out(site, name, entry_points=entry_points)
    return site


def model_directory(run_cache: RunCache, architecture: str) -> Path:
    """The tiny ``architecture`` model, built once per run."""
    return build(architecture, run_cache.directory(f"vllm-model-{architecture}", lambda d: build(architecture, d)))


def device_site(run_cache: RunCache) -> Path:
    """A site directory with the test device's autoload distribution: ``import torch`` loads it as ``testdev``."""
    return run_cache.directory("vllm-testdev-site", lambda d: write_autoload_distribution(d, "testdev"))


def reference(run_cache: RunCache, model: Path, *options: str) -> dict[str, Any]:
    """vLLM's own CpuPlatform's result for ``model`` and ``options``, computed once per run."""
    name = "vllm-reference-" + "-".join([model.name, *options]).replace("--", "").replace("/", "_")

    def compute(directory: Path) -> None:
        (directory / "result.json").write_text(json.dumps(generate(model, *options)))

    return json.loads((run_cache.directory(name, compute) / "result.json").read_text())  # type: ignore[no-any-return]
