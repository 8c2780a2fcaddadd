#!/usr/bin/env bash
# ZeRO-3 and ZeRO-Offload on one GPU (nccl), through accelhal's DeepSpeed adapter and through
# DeepSpeed's own cuda accelerator: the losses side by side, fp32 and bf16.
#
#   source scripts/gpu-setup.sh && bash scripts/gpu-deepspeed.sh "$OUT"
#
# .whl/ must hold DeepSpeed 0.19.8 and its dependencies (einops, hjson, msgpack, ninja,
# py-cpuinfo, tqdm, psutil) besides gpu-setup.sh's wheels:
#   ../shared/device/fetch-wheels.sh einops hjson msgpack ninja py-cpuinfo tqdm psutil
#   plus a deepspeed-0.19.8-py3-none-any.whl (pip wheel --no-deps deepspeed==0.19.8).
# Writes $OUT/gpu-deepspeed.log (everything printed) and $OUT/gpu-deepspeed.json (every run's
# report). Exit status 0 when every group trained identically; the offload groups need
# DeepSpeed's cpu_adam op built for cuda (a C++ compiler and the CUDA toolkit): where it cannot
# be built, the log says why and those groups fail alone.
set -uo pipefail
out=${1:?usage: bash scripts/gpu-deepspeed.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
[ -d .site/bin ] && export PATH="$PWD/.site/bin:$PATH"  # ninja from its wheel

{
  echo "== machine"
  python3 - <<'EOF'
import importlib.metadata as md
import torch
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.device_count()} GPU(s):",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
for name in ("deepspeed", "accelhal"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "NOT INSTALLED: see the header of scripts/gpu-deepspeed.sh")
from torch.utils.cpp_extension import CUDA_HOME
print("CUDA_HOME (torch's view):", CUDA_HOME)
EOF
  for tool in gcc c++ nvcc ninja; do printf '%s: %s\n' "$tool" "$(command -v "$tool" || echo 'not found')"; done

  echo "== every DeepSpeed call site on cuda, against DeepSpeed's CUDA_Accelerator"
  python3 -m pytest -m cuda -q -p no:cacheprovider tests/compat/test_deepspeed_call_sites.py 2>&1 | tail -15

  echo "== ZeRO-2/3 and ZeRO-Offload, world size 1, accelhal | DeepSpeed's own"
  python3 -m tests.compat.deepspeed_compare --backend cuda --dtypes fp32 bf16 --out "$out/gpu-deepspeed.json"
} 2>&1 | tee "$out/gpu-deepspeed.log"
exit "${PIPESTATUS[0]}"
