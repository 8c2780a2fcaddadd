"""``python -m sglang.launch_server`` through the bridge: the ``openai`` client's completion, chat and streaming.

One server on a loopback port, a tiny Qwen2 with a word tokenizer built in code; accelhal's cpu
backend, the bridge by its default rule (no SGLang CPU engine asked for). A bad request is
answered with an error and the server goes on serving; once stopped, none of its processes is left.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.compat.engines import kill_group
from tests.compat.sglang.models import build_served
from tests.compat.sglang.runs import environment
from tests.compat.vllm.models import PROMPTS
from tests.sharing import RunCache, free_port
from tests.simulation import ROOT

pytestmark = pytest.mark.slow

START_SECONDS = 600.0
TOKENS = 12


def wait_ready(server: subprocess.Popen[str], client: Any) -> None:
    """Until the server lists its model; fails with its output if it exits or takes too long."""
    import openai

    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            stdout, stderr = server.communicate()
            pytest.fail(f"launch_server exited with {server.returncode}:\n{stdout[-2000:]}\n{stderr[-6000:]}")
        try:
            if [model.id for model in client.models.list()] == ["tiny"]:
                return
        except openai.APIError:
            pass
        time.sleep(1)
    stdout, stderr = kill_group(server)
    pytest.fail(f"launch_server was not ready within {START_SECONDS:g} s:\n{stderr[-6000:]}")


def reference(model: Path, prompt: list[int]) -> list[int]:
    """transformers' greedy tokens for ``prompt`` (float32, on cpu)."""
    from tests.compat.sglang.generate import transformers_tokens

    return transformers_tokens(str(model), TOKENS, [prompt])[0]


def test_the_openai_client_is_served_and_the_server_leaves_nothing_running(run_cache: RunCache) -> None:
    import openai
    from transformers import AutoTokenizer

    model = run_cache.directory("sglang-served", build_served) / "qwen2-served"
    tokenizer = AutoTokenizer.from_pretrained(str(model / "tokenizer"))
    port = free_port()
    command = [
        sys.executable, "-m", "sglang.launch_server", "--model-path", str(model), "--tokenizer-path",
        str(model / "tokenizer"), "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
        "--max-total-tokens", "2048", "--random-seed", "0", "--served-model-name", "tiny", "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(
        command, cwd=ROOT, env=environment(ACCELHAL_ACCELERATOR="cpu"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    tree: list[psutil.Process] = []
    greedy = {"temperature": 0, "max_tokens": TOKENS, "extra_body": {"ignore_eos": True}}
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=300)
        wait_ready(server, client)
        tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
        completion = client.completions.create(model="tiny", prompt=PROMPTS[0], **greedy)  # type: ignore[arg-type]
        words = tokenizer.decode(reference(model, PROMPTS[0])).split()  # SGLang's detokenizer adds a leading space
        assert completion.choices[0].text.split() == words

        messages = [{"role": "user", "content": "w1 w2 w3 w4"}]
        chat = client.chat.completions.create(model="tiny", messages=messages, **greedy)  # type: ignore[arg-type]
        chat_prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)["input_ids"]
        expected = tokenizer.decode(reference(model, chat_prompt)).split()
        assert (chat.choices[0].message.content or "").split() == expected

        stream = client.chat.completions.create(model="tiny", messages=messages, stream=True, **greedy)  # type: ignore[arg-type]
        pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
        assert len([piece for piece in pieces if piece]) > 1 and "".join(pieces).split() == expected

        with pytest.raises(openai.BadRequestError):
            client.completions.create(model="tiny", prompt="w1 w2", max_tokens=-1)
        again = client.completions.create(model="tiny", prompt=PROMPTS[0], **greedy)  # type: ignore[arg-type]
        assert again.choices[0].text == completion.choices[0].text
    finally:
        server.terminate()  # SGLang's own shutdown, as Ctrl-C or a scheduler would ask
        try:
            server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            kill_group(server)
            pytest.fail("launch_server did not stop within 60 s of SIGTERM")
    _, still = psutil.wait_procs(tree, timeout=15)
    for process in still:
        process.kill()
    assert not still, f"processes of launch_server still running 15 s after it stopped: {[p.pid for p in still]}"
