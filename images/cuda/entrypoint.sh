#!/bin/sh
# Runs under tini (PID 1), which forwards signals to the runner and reaps Godot children.
# `IMAGE run m.yaml` runs `rlcrate run m.yaml`; a program on PATH (bash, python ...) runs as given.
set -eu
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "rlcrate-cuda: no GPU in this container; start it with --gpus all (NVIDIA container toolkit)" >&2
fi
if [ "$#" -eq 0 ]; then
    set -- rlcrate doctor
elif ! command -v "$1" >/dev/null 2>&1; then
    set -- rlcrate "$@"
fi
exec "$@"
