#!/usr/bin/env bash
# torch.compile with accelhal's answer on the GPU: the cuda test (eager's outputs, no
# recompilation) and the compiled / eager training-step figure (benchmarks/compile.py).
#
#   source scripts/gpu-setup.sh && bash scripts/gpu-compile.sh "$OUT"
#
# Needs only gpu-setup.sh's wheels: torch's CUDA wheel brings triton, in which Inductor writes
# its GPU kernels. Writes $OUT/gpu-compile.log (everything printed) and $OUT/compile.json (the
# benchmark's figures and raw samples). Runs on a machine without a GPU too (the cuda test is
# skipped, the figures are those of the backend selected there); extra arguments go to the
# benchmark (`--quick` for fewer repeats).
set -uo pipefail
out=${1:?usage: bash scripts/gpu-compile.sh OUT_DIR [--quick]}
shift
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
status=0
{
  echo "== machine"
  python3 - <<'PY'
import importlib.util
import torch
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.device_count()} GPU(s):",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
spec = importlib.util.find_spec("triton")
if spec is None:
    print("triton: not installed")
else:
    import triton
    print("triton", triton.__version__)
import accelhal
acc = accelhal.get_accelerator()
choice = acc.compile_backend_choice()
print(f"accelhal: {acc.name}; get_compile_backend() = {choice.backend!r} ({choice.source}: {choice.reason})")
PY
  echo "== the small model, compiled with the answer, against eager"
  python3 -m tests.compiled_model || status=1
  echo "== tests/gpu/test_compile_cuda.py"
  python3 -m pytest -m cuda -q -s -p no:cacheprovider tests/gpu/test_compile_cuda.py || status=1
  echo "== compiled / eager training step"
  python3 -m benchmarks --suite compile --out "$out" "$@" || status=1
  echo "== exit status $status"
} 2>&1 | tee "$out/gpu-compile.log"
exit "$(tail -1 "$out/gpu-compile.log" | awk '{print $NF}')"
