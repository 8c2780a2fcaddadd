#!/usr/bin/env bash
# Source this on the GPU machine (its Python has torch with CUDA but lacks some of our
# dependencies, carried as wheels in .whl/): installs them, then accelhal in editable mode.
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$PWD/.site" .whl/*.whl \
  && export PYTHONPATH="$PWD/.site" \
  && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . \
  && export PYTHONUNBUFFERED=1
