#!/usr/bin/env bash
# Check rlcrate's GPU path on a machine with an NVIDIA GPU (see check_gpu.py); writes one JSON.
#   tests/gpu/check_gpu.sh [--wheels DIR] [OUT.json] [--only STEP,...] [--dry]
# --wheels DIR: a machine without a package index that has Python 3.12 with torch and JAX at
# `python3`: DIR is the wheelhouse `make gpu-wheels` builds (.cache/gpu-wheels), carried there
# beside the working tree; it is installed with pip install --no-index --no-deps --target.
# Without --wheels: the checkout's .venv (make venv) and, for Isaac Lab, the GPU environment
# (make gpu-env: images/cuda/requirements.lock, the CUDA image's own lock).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
for arg in "$@"; do [ "$arg" = --wheels ] && py=python3; done
exec timeout 470 "$py" tests/gpu/check_gpu.py "$@"
