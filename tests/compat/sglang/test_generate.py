"""SGLang's own engine through the bridge: transformers' greedy tokens, on cpu and on a device SGLang never heard of.

Each run is a fresh process (SGLang spawns its scheduler and detokenizer in processes of their
own) with no device given to the engine: SGLang asks its platform. The tokens are compared with
transformers' ``generate`` on the same model in float32, computed in the same process after the
engine has stopped; prompts of different lengths in one batch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.engines import device_site
from tests.compat.sglang import placement
from tests.compat.sglang.runs import FORCED, generate
from tests.compat.vllm.runs import model_directory
from tests.sharing import RunCache

pytestmark = pytest.mark.slow


def test_cpu_through_the_bridge_gives_transformers_tokens(run_cache: RunCache, tmp_path: Path) -> None:
    model = model_directory(run_cache, "qwen2")
    site = placement.install(tmp_path / "site")
    result = generate(model, "--reference", sites=(site,), TESTS_SGLANG_PLACEMENT=str(tmp_path / "placed"), **FORCED)
    assert result["platform"] == "AccelhalCpuPlatform"
    assert result["placement"] == [{"weights": "cpu", "kv_cache": "cpu", "device": "cpu", "runner": "ModelRunner"}]
    assert [len(tokens) for tokens in result["tokens"]] == [16] * 4
    assert result["tokens"] == result["reference"]


def test_a_device_sglang_never_heard_of_gives_transformers_tokens(run_cache: RunCache, tmp_path: Path) -> None:
    """The test tree's PrivateUse1 device, chosen by accelhal's generic backend: no SGLang code in its plugin."""
    model = model_directory(run_cache, "llama")
    site = placement.install(tmp_path / "site")
    placed = str(tmp_path / "placed")
    result = generate(model, "--reference", sites=(device_site(run_cache), site), TESTS_SGLANG_PLACEMENT=placed)
    assert result["platform"] == "AccelhalTestdevPlatform"
    assert result["placement"] == [
        {"weights": "testdev:0", "kv_cache": "testdev:0", "device": "testdev", "runner": "ModelRunner"}
    ]
    assert result["tokens"] == result["reference"]
    assert len({tuple(tokens) for tokens in result["tokens"]}) == 4  # four prompts, four different answers
