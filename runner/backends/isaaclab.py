"""Isaac Lab tasks: reported by `doctor`; running them is not implemented here yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.backends._unported import missing, not_runnable
from runner.manifest.schema import EnvSpec, ParallelSpec


def available() -> str | None:
    return missing("isaaclab", "isaaclab") or str(not_runnable("isaaclab"))


def env_ids() -> list[str]:
    return []


def check_env(env: EnvSpec) -> None:
    raise not_runnable("isaaclab")


def spaces(env: EnvSpec) -> tuple[Any, Any] | None:
    return None


def action_kind(env: EnvSpec) -> str | None:
    return None


def check_parallel(parallel: ParallelSpec) -> str | None:
    return None


def make_vec_env(env: EnvSpec, parallel: ParallelSpec, *, seed: int, log_dir: Path | None) -> Any:
    raise not_runnable("isaaclab")


def versions() -> dict[str, dict[str, Any]]:
    return {}


def interpreter() -> str | None:
    return None
