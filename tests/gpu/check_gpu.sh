#!/usr/bin/env bash
# Check rlcrate's GPU path on a machine with an NVIDIA GPU (see check_gpu.py); writes JSON.
#   tests/gpu/check_gpu.sh [OUT.json]
# Needs the checkout's venvs: .venv (make venv), and for Brax / Isaac Lab their own environments
# (make brax-env, then .cache/brax-env/bin/pip install 'jax[cuda12]==0.9.2' for JAX on the GPU;
# make isaaclab-env). The cuda image's lock cannot run Isaac Lab or Brax's PPO yet (README, Images).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec timeout 470 .venv/bin/python tests/gpu/check_gpu.py "${1:-gpu-check.json}"
