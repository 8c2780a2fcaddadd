"""torch.compile on cuda with ``get_compile_backend()``: run on the GPU machine with ``python3 -m pytest -m cuda -q``.

In a fresh interpreter: answering creates no CUDA context and imports neither Dynamo nor
Inductor; the small model of :mod:`tests.compiled_model` compiled with the answer (Inductor,
where the triton package is installed, as with torch's CUDA wheels) gives eager's outputs
within float32's tolerance and does not recompile on a second call.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compiled_model import TOLERANCE

pytestmark = pytest.mark.cuda

ROOT = Path(__file__).resolve().parents[2]

ON_CUDA = """
import json, sys, torch
import accelhal
from tests import compiled_model

acc = accelhal.get_accelerator()
answer = acc.get_compile_backend()
state = {"context": torch.cuda.is_initialized(),
         "loaded": sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules)}
print(json.dumps({"answer": answer, **state, "compiled": compiled_model.compare()}))
"""


def test_the_answer_compiles_on_cuda_to_eagers_outputs_without_recompiling() -> None:
    out = subprocess.run(
        [sys.executable, "-c", ON_CUDA], capture_output=True, text=True, timeout=600, cwd=ROOT, env=dict(os.environ)
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\ncuda: {result['compiled']}")
    expected = "inductor" if importlib.util.find_spec("triton") is not None else "aot_eager"
    assert result["answer"] == result["compiled"]["backend"] == expected
    assert result["context"] is False and result["loaded"] == []
    compiled = result["compiled"]
    assert compiled["accelerator"] == "cuda" and compiled["output_device"].startswith("cuda:")
    assert compiled["max_abs_difference"] <= TOLERANCE["atol"]
    assert (compiled["graphs_after_first_call"], compiled["recompiles"]) == (1, 0)
