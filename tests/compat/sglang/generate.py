"""Generate greedy tokens with SGLang's offline engine; prints one line ``RESULT {"tokens": [...], ...}``.

Run as a script (SGLang spawns its scheduler process, which imports the main module):
``python -m tests.compat.sglang.generate MODEL_DIR [--max-tokens 16] [--reference]``. The engine is
given the model, float32 and a small KV cache: never a device (SGLang asks its platform).
``--reference`` adds transformers' greedy ``generate`` of each prompt on cpu in float32.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from tests.compat.vllm.models import PROMPTS

ENGINE_OPTIONS: dict[str, Any] = {
    "skip_tokenizer_init": True,
    "dtype": "float32",
    "max_total_tokens": 2048,
    "log_level": "warning",
    "random_seed": 0,
}
"""What the tests and the benchmark give SGLang's engine: no device, no attention backend."""


def transformers_tokens(model: str, max_tokens: int, prompts: list[list[int]] = PROMPTS) -> list[list[int]]:
    """transformers' greedy tokens for each of ``prompts``, on cpu in float32."""
    import torch
    import transformers

    reference: Any = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    reference.train(False)
    tokens = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            out = reference.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=max_tokens,
                min_new_tokens=max_tokens, pad_token_id=0,
            )  # fmt: skip
        tokens.append(out[0, len(prompt) :].tolist())
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    import sglang

    engine = sglang.Engine(model_path=args.model, **ENGINE_OPTIONS)
    ready = time.monotonic()
    try:
        params = {"temperature": 0, "max_new_tokens": args.max_tokens, "ignore_eos": True}
        outputs = engine.generate(input_ids=PROMPTS, sampling_params=params)
        generated = time.monotonic()
        from sglang.srt.platforms import current_platform

        result: dict[str, Any] = {
            "tokens": [output["output_ids"] for output in outputs],
            "platform": type(current_platform).__name__,
            "start_seconds": ready - started,
            "generate_seconds": generated - ready,
        }
    finally:
        engine.shutdown()
    if args.reference:
        result["reference"] = transformers_tokens(args.model, args.max_tokens)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
