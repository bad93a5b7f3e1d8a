"""A toy backend: one class to the `Backend` contract, added by its entry point alone
(`rlcrate.backends`: toy = rlcrate_toys.line:Line), with nothing in rlcrate told of it.

Its one env, `line`, is a walk on a line: move left or right, reward 1 for each step right,
`length` steps an episode (its one option, 20 by default). Every env steps in the unit's own
process; it offers SB3's VecEnv and single Gymnasium envs, so both Stable-Baselines3 and the
toy_climb trainer train on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from runner.backends.base import GYMNASIUM_ENV, SB3_VEC_ENV, Backend, Traits, unknown_id
from runner.errors import FieldProblem
from runner.manifest.schema import EnvSpec, ParallelSpec

IDS = ("line",)


class LineEnv(EnvSpec):
    """The toy backend's env options."""

    length: int = Field(20, ge=1, le=10_000, description="Steps per episode.")


def _spaces() -> tuple[Any, Any]:
    from gymnasium import spaces

    return spaces.Box(-10_000.0, 10_000.0, (1,)), spaces.Discrete(2)


def line_env(length: int) -> Any:
    import gymnasium as gym
    import numpy as np

    class Walk(gym.Env):
        observation_space, action_space = _spaces()

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            self.x, self.t = 0.0, 0
            return np.array([self.x], dtype=np.float32), {}

        def step(self, action: Any) -> Any:
            self.x += 1.0 if int(action) == 1 else -1.0
            self.t += 1
            obs = np.array([self.x], dtype=np.float32)
            return obs, float(int(action) == 1), False, self.t >= length, {}

    return Walk()


class Line(Backend[LineEnv]):
    name = "toy"
    Options = LineEnv
    TRAITS = Traits(module="gymnasium", extra="gymnasium")
    interfaces = (SB3_VEC_ENV, GYMNASIUM_ENV)

    def available(self) -> str | None:
        return None

    def env_ids(self) -> list[str]:
        return list(IDS)

    def check_env(self, env: LineEnv) -> list[FieldProblem]:
        return [] if env.id in IDS else [unknown_id("toy", env.id, IDS)]

    def spaces(self, env: LineEnv) -> tuple[Any, Any] | None:
        return _spaces()

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        if parallel.envs != 1:
            msg = "the toy backend steps one env; set parallel.envs: 1"
            return [FieldProblem(("parallel", "envs"), msg)]
        return []

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        return [("toy line", True, "always here")]

    def make_env(
        self,
        env: LineEnv,
        parallel: ParallelSpec,
        *,
        interface: str,
        seed: int,
        log_dir: Path | None = None,
    ) -> Any:
        if interface != GYMNASIUM_ENV:
            return super().make_env(env, parallel, interface=interface, seed=seed, log_dir=log_dir)
        self.require_env(env)
        made = line_env(env.length)
        made.action_space.seed(seed)
        return made

    def make_vec_env(
        self, env: LineEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> Any:
        from stable_baselines3.common.vec_env import DummyVecEnv

        self.require_env(env)
        venv = DummyVecEnv([lambda: line_env(env.length) for _ in range(parallel.envs)])
        venv.seed(seed)
        return venv
