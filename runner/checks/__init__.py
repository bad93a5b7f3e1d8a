"""Checks of a manifest that consult the backend and trainer registries (above them, so the manifest
layer never imports upward): the whole load pipeline, sweep points, installed packages, and the dry
construction."""
