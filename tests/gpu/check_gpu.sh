#!/usr/bin/env bash
# Check rlcrate's GPU path on a machine with an NVIDIA GPU (see check_gpu.py); writes JSON.
#   tests/gpu/check_gpu.sh [OUT.json] [--only STEP,...] [--dry]   (--dry: no GPU needed)
# Needs the checkout's environments: .venv (make venv) and the GPU environment (make gpu-env:
# images/cuda/requirements.lock, the CUDA image's own lock, with Isaac Lab and JAX's CUDA plugin).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec timeout 470 .venv/bin/python tests/gpu/check_gpu.py "$@"
