#!/bin/sh
# Runs under tini (PID 1), which forwards signals to the runner and reaps Godot children.
# `IMAGE run m.yaml` runs `rlcrate run m.yaml`; a program on PATH (bash, python ...) runs as given.
set -eu
if [ "$#" -eq 0 ]; then
    set -- rlcrate doctor
elif ! command -v "$1" >/dev/null 2>&1; then
    set -- rlcrate "$@"
fi
exec "$@"
