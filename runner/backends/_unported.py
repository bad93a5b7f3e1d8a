"""What backends detected by `doctor` but not yet runnable by this version share."""

from __future__ import annotations

import importlib.util

from runner.errors import BackendUnavailable


def missing(module: str, extra: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed (pip install 'rlcrate[{extra}]', or use the cuda image)"
    return None


def not_runnable(backend: str) -> BackendUnavailable:
    return BackendUnavailable(
        f"the {backend} backend is detected by `rlcrate doctor` but running it is not "
        "implemented in this version of rlcrate (see README, 'Backends')"
    )
