"""A toy backend: one module to the `Backend` contract, added with `runner.backends.register`
(a shipped backend would be `runner/backends/toy.py` plus its name in `BackendName`).

Its one env, `line`, is a walk on a line: move left or right, reward 1 for each step right,
20 steps an episode. Every env steps in the unit's own process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.backends.base import Traits, unknown_id
from runner.manifest.schema import EnvSpec, ParallelSpec

TRAITS = Traits(module="gymnasium", extra="gymnasium")
IDS = ("line",)


def _spaces() -> tuple[Any, Any]:
    from gymnasium import spaces

    return spaces.Box(-20.0, 20.0, (1,)), spaces.Discrete(2)


def _line_env() -> Any:
    import gymnasium as gym
    import numpy as np

    class Line(gym.Env):
        observation_space, action_space = _spaces()

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            self.x, self.t = 0.0, 0
            return np.array([self.x], dtype=np.float32), {}

        def step(self, action: Any) -> Any:
            self.x += 1.0 if int(action) == 1 else -1.0
            self.t += 1
            obs = np.array([self.x], dtype=np.float32)
            return obs, float(int(action) == 1), False, self.t >= 20, {}

    return Line()


def available() -> str | None:
    return None


def env_ids() -> list[str]:
    return list(IDS)


def check_env(env: EnvSpec) -> None:
    if env.id not in IDS:
        raise unknown_id("toy", env.id, IDS)


def spaces(env: EnvSpec) -> tuple[Any, Any] | None:
    return _spaces()


def action_kind(env: EnvSpec) -> str | None:
    return "Discrete"


def check_parallel(parallel: ParallelSpec) -> str | None:
    return "the toy backend steps one env; set parallel.envs: 1" if parallel.envs != 1 else None


def make_vec_env(env: EnvSpec, parallel: ParallelSpec, *, seed: int, log_dir: Path | None) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    check_env(env)
    venv = DummyVecEnv([_line_env for _ in range(parallel.envs)])
    venv.seed(seed)
    return venv


def versions() -> dict[str, dict[str, Any]]:
    return {}


def processes(parallel: ParallelSpec) -> int:
    return 0


def nondeterminism(env: EnvSpec) -> str | None:
    return None


def env_files(env: EnvSpec) -> tuple[str, Path] | None:
    return None


def step_split(venv: Any) -> Any | None:
    return None


def doctor_rows() -> list[tuple[str, bool, str]]:
    return [("toy line", True, "always here")]


def interpreter() -> str | None:
    return None
