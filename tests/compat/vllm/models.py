"""Tiny models for vLLM, built from a config with seeded random weights and saved as a model directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ARCHITECTURES: dict[str, dict[str, Any]] = {
    "llama": {
        "config": "LlamaConfig",
        "model": "LlamaForCausalLM",
        "options": {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2},
    },
    "qwen2": {
        "config": "Qwen2Config",
        "model": "Qwen2ForCausalLM",
        "options": {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2},
    },
}
"""Head size 64: vLLM's CPU attention refuses 16."""

COMMON = {"num_hidden_layers": 2, "vocab_size": 1024, "max_position_embeddings": 512, "tie_word_embeddings": False}

PROMPTS = [[1, 17, 42, 99, 7], [1, 300, 301, 302, 5, 6, 900, 12, 14, 15, 16, 400, 3], [1, 2], list(range(1, 40))]
"""Token-id prompts of different lengths, sent in one batch."""


def build(architecture: str, directory: Path, seed: int = 0) -> Path:
    """Save the tiny ``architecture`` model (float32 weights) under ``directory``; returns the model directory."""
    import torch
    import transformers

    spec = ARCHITECTURES[architecture]
    target = directory / architecture
    if (target / "config.json").exists():
        return target
    config = getattr(transformers, spec["config"])(**COMMON, **spec["options"])
    torch.manual_seed(seed)
    model = getattr(transformers, spec["model"])(config)
    model.save_pretrained(str(target))
    (target / "accelhal-model.json").write_text(json.dumps({"architecture": architecture, "seed": seed}))
    return target
