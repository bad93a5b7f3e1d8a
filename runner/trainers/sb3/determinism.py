"""`check-determinism`'s attempt for Stable-Baselines3: a thin VecEnv wrapper digests what passes
between the algorithm and the envs at every vector step; then the final parameters."""

from __future__ import annotations

import time
from typing import Any

from runner.manifest.schema import Manifest
from runner.trainers.base import digest
from runner.trainers.results import DeterminismAttempt


def _recorder(venv: Any, log: list[list[str]]) -> Any:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class Recorder(VecEnvWrapper):
        """Digests of what passes between the algorithm and the envs, one row per step."""

        def reset(self) -> Any:
            obs = self.venv.reset()
            log.append([digest(obs), "", ""])
            return obs

        def step_async(self, actions: Any) -> None:
            self._action = digest(actions)
            self.venv.step_async(actions)

        def step_wait(self) -> Any:
            obs, rew, done, info = self.venv.step_wait()
            log.append([digest(obs), self._action, digest(rew)])
            return obs, rew, done, info

    return Recorder(venv)


def attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> DeterminismAttempt:
    """Train `steps` env steps (SB3 collects whole rollouts, so maybe more) and digest them."""
    from runner.trainers.sb3.common import make_env, make_model

    log: list[list[str]] = []
    t0 = time.perf_counter()
    venv = _recorder(make_env(cfg, seed=seeds["env"], monitor=False), log)
    try:
        model = make_model(cfg, venv, seed=seeds["model"], tb_dir=None)
        model.learn(total_timesteps=steps, progress_bar=False)
        state = model.policy.state_dict()
        params = digest({k: v.detach().cpu().numpy() for k, v in state.items()})
        trained = int(model.num_timesteps)
    finally:
        venv.close()
    vector_steps = max(len(log) - 1, 0)  # the first row is the reset
    return DeterminismAttempt(
        steps=log,
        params=params,
        env_steps=trained,
        compares=(
            f"observations, actions and rewards of {vector_steps} vector steps "
            f"({trained} env steps over {cfg.parallel.envs} envs) and the final parameters"
        ),
        seconds=time.perf_counter() - t0,
    )
