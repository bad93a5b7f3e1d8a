"""Shared body of backends detected by `doctor` but not yet runnable by this version."""

from __future__ import annotations

import importlib.util
from typing import Any

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


class Unported:
    """The backend contract for a backend `doctor` reports but this version cannot run."""

    def __init__(self, name: str, module: str, extra: str):
        self.name, self.module, self.extra = name, module, extra

    def available(self) -> str | None:
        return missing(self.module, self.extra) or str(not_runnable(self.name))

    def env_ids(self) -> list[str]:
        return []

    def check_env(self, env: Any) -> None:
        raise not_runnable(self.name)

    def spaces(self, env: Any) -> Any:
        return None

    def make_vec_env(
        self, env: Any, *, n_envs: int, workers: int, mode: str, seed: int, log_dir: Any = None
    ) -> Any:
        raise not_runnable(self.name)


def contract(name: str, module: str, extra: str) -> tuple[Any, ...]:
    """(available, env_ids, check_env, spaces, make_vec_env) of an Unported backend."""
    b = Unported(name, module, extra)
    return b.available, b.env_ids, b.check_env, b.spaces, b.make_vec_env
