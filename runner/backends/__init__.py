"""Backend registry: name -> module, imported only when asked for.

Each backend module provides (see `base.py` for the contract):
    available() -> str | None          None when usable, else a one-line reason
    env_ids() -> list[str]             ids it offers (may be a representative list)
    check_env(env) -> None             raises UserInputError for an unknown id (with suggestion)
    spaces(env) -> (obs, act) | None   gymnasium spaces, when cheap to know without launching
    make_vec_env(env, *, n_envs, workers, mode, seed, log_dir=None) -> VecEnv
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import Final

from runner.errors import UserInputError

BACKENDS: Final[dict[str, str]] = {
    "gymnasium": "runner.backends.gymnasium",
    "envpool": "runner.backends.envpool",
    "godot": "runner.backends.godot",
    "isaaclab": "runner.backends.isaaclab",
    "brax": "runner.backends.brax",
}


@cache
def get_backend(name: str) -> ModuleType:
    if name not in BACKENDS:
        raise UserInputError(f"Unknown backend '{name}'. Valid backends: {', '.join(BACKENDS)}.")
    return importlib.import_module(BACKENDS[name])
