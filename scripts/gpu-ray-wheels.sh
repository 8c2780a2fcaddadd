#!/usr/bin/env bash
# Fetches, into ./.whl-ray of this repository (kept out of git), the cp312 wheels that
# scripts/gpu-ray.py needs on the GPU machine beyond accelhal's own (.whl, from
# ../shared/device/fetch-wheels.sh): Ray 2.60.0 and what `import ray.train` requires.
# They come to about 144 MiB (ray 75.6, pyarrow 52.5, pandas 11.5, the rest 4), more than
# one call may carry (64 MiB), so they are laid out in three folders of at most 60 MiB,
# the ray wheel cut in two (`split`), to be carried one per call on the same warm machine:
#
#   .whl-ray/1   the first 60 MiB of the ray wheel
#   .whl-ray/2   the rest of it, pandas and the small wheels
#   .whl-ray/3   pyarrow
#
# The last call puts the ray wheel together again and installs everything (docs/ray.md).
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl-ray/' "$exclude" 2>/dev/null || echo '/.whl-ray/' >> "$exclude"
rm -rf .whl-ray && mkdir -p .whl-ray/all .whl-ray/1 .whl-ray/2 .whl-ray/3
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl-ray/all \
  ray==2.60.0 pyarrow==26.0.1 pandas==3.1.1 python-dateutil pytz tzdata six fsspec msgpack protobuf \
  requests urllib3 idna certifi charset-normalizer pyyaml jsonschema attrs referencing rpds-py \
  jsonschema-specifications click packaging 2>&1 | grep -v 'is ignored' || true
ray_wheel=$(basename .whl-ray/all/ray-*.whl)
split -b 60M ".whl-ray/all/$ray_wheel" ".whl-ray/1/$ray_wheel.part-"
mv ".whl-ray/1/$ray_wheel.part-ab" .whl-ray/2/
mv .whl-ray/all/pyarrow-*.whl .whl-ray/3/
rm ".whl-ray/all/$ray_wheel"
mv .whl-ray/all/*.whl .whl-ray/2/
rmdir .whl-ray/all
du -sh .whl-ray/1 .whl-ray/2 .whl-ray/3
