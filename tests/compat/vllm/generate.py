"""Generate greedy tokens with vLLM's offline engine; prints one JSON line: ``{"tokens": [...], "platform": ...}``.

Run as a script (vLLM spawns its engine core process, which imports the main module):
``python -m tests.compat.vllm.generate MODEL_DIR [--dtype float32] [--prefix-caching on|off] [--max-tokens 16]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def placement(worker: object) -> dict[str, str]:
    """Where a worker's model and KV cache live (run in each worker by ``LLM.collective_rpc``)."""
    worker = getattr(worker, "worker", worker)  # vLLM's WorkerWrapperBase holds the worker
    runner = worker.model_runner  # type: ignore[attr-defined]
    caches = [t for t in runner.kv_caches if hasattr(t, "device")] if hasattr(runner, "kv_caches") else []
    return {
        "weights": str(next(runner.get_model().parameters()).device),
        "kv_cache": str(caches[0].device) if caches else "",
        "worker": type(worker).__name__,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--prefix-caching", choices=("on", "off"), default="on")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--tensor-parallel", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")  # LLM.collective_rpc(placement) pickles it
    from vllm import LLM, SamplingParams

    from tests.compat.vllm.models import PROMPTS

    started = time.monotonic()
    llm = LLM(
        model=args.model,
        skip_tokenizer_init=True,
        enforce_eager=True,
        dtype=args.dtype,
        max_model_len=160,
        enable_prefix_caching=args.prefix_caching == "on",
        tensor_parallel_size=args.tensor_parallel,
        seed=0,
    )
    ready = time.monotonic()
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens, ignore_eos=True)
    outputs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params)
    from vllm.platforms import current_platform

    devices = llm.collective_rpc(placement)

    result = {
        "tokens": [list(o.outputs[0].token_ids) for o in outputs],
        "platform": type(current_platform).__name__,
        "devices": devices,
        "start_seconds": ready - started,
        "generate_seconds": time.monotonic() - ready,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
