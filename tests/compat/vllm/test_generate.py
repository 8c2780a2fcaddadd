"""vLLM itself, through the bridge: the same greedy tokens as vLLM's own CpuPlatform, to the token.

Each run is a fresh process (vLLM spawns its engine core, and its worker, in processes of
their own); tokens are compared with vLLM's CpuPlatform on the same tiny model, prompts of
different lengths in one batch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.vllm.runs import device_site, generate, model_directory, reference
from tests.sharing import RunCache

pytestmark = pytest.mark.slow

FORCED = {"ACCELHAL_VLLM_PLATFORM": "on", "ACCELHAL_ACCELERATOR": "cpu"}
"""The bridge forced on cpu."""

CASES = [
    ("llama", "float32", "on"),
    ("llama", "bfloat16", "off"),
    ("qwen2", "float32", "off"),
    ("qwen2", "bfloat16", "on"),
]
"""Architecture, dtype, prefix caching: every pair of two of their values in some case (four cases, not the eight of
every combination; each case is two engine runs of about 35 s in CI)."""


@pytest.mark.parametrize(("architecture", "dtype", "prefix"), CASES)
def test_cpu_through_the_bridge_gives_cpu_platform_tokens(
    run_cache: RunCache, architecture: str, dtype: str, prefix: str
) -> None:
    model = model_directory(run_cache, architecture)
    options = ("--dtype", dtype, "--prefix-caching", prefix)
    own = reference(run_cache, model, *options)
    bridged = generate(model, *options, **FORCED)
    assert own["platform"] == "CpuPlatform"
    assert bridged["platform"] == "AccelhalCpuPlatform"
    assert bridged["tokens"] == own["tokens"]
    assert [len(t) for t in own["tokens"]] == [16] * 4


def test_a_device_vllm_never_heard_of_gives_the_cpu_tokens(run_cache: RunCache) -> None:
    """The test tree's PrivateUse1 device, chosen by accelhal's generic backend: no vLLM code in its plugin."""
    model = model_directory(run_cache, "llama")
    own = reference(run_cache, model, "--dtype", "float32", "--prefix-caching", "on")
    on_device = generate(model, "--dtype", "float32", "--prefix-caching", "on", site=device_site(run_cache))
    assert on_device["platform"] == "AccelhalTestdevPlatform"
    assert on_device["devices"] == [{"weights": "testdev:0", "kv_cache": "testdev:0", "worker": "DeviceWorker"}]
    assert on_device["tokens"] == own["tokens"]


def test_tensor_parallel_two_processes_give_one_process_tokens(run_cache: RunCache) -> None:
    """Tensor parallel 2 on cpu through the bridge: two workers over gloo, the tokens of one process."""
    model = model_directory(run_cache, "llama")
    own = reference(run_cache, model, "--dtype", "float32", "--prefix-caching", "on")
    options = ("--dtype", "float32", "--prefix-caching", "on", "--tensor-parallel", "2")
    two = generate(model, *options, VLLM_CPU_OMP_THREADS_BIND="nobind", **FORCED)  # vLLM binds a NUMA node a rank
    assert two["platform"] == "AccelhalCpuPlatform"
    assert len(two["devices"]) == 2
    assert two["tokens"] == own["tokens"]


def test_results_name_the_model_they_ran(run_cache: RunCache) -> None:
    """The tiny models differ (else equal tokens would prove nothing): two architectures, two token lists."""
    llama = reference(run_cache, model_directory(run_cache, "llama"), "--dtype", "float32", "--prefix-caching", "on")
    qwen2 = reference(run_cache, model_directory(run_cache, "qwen2"), "--dtype", "float32", "--prefix-caching", "off")
    assert llama["tokens"] != qwen2["tokens"]
    assert Path(model_directory(run_cache, "qwen2")).name == "qwen2"
