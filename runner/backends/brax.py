"""Brax environments: reported by `doctor`; running them is not implemented here yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.backends._unported import missing, not_runnable
from runner.manifest.schema import EnvSpec


def available() -> str | None:
    return missing("brax", "jax") or str(not_runnable("brax"))


def env_ids() -> list[str]:
    return []


def check_env(env: EnvSpec) -> None:
    raise not_runnable("brax")


def spaces(env: EnvSpec) -> Any:
    return None


def make_vec_env(
    env: EnvSpec, *, n_envs: int, workers: int, mode: str, seed: int, log_dir: Path | None = None
) -> Any:
    raise not_runnable("brax")
