"""An evaluation episode cut at a bound (`trainers.base.episode_bound`): an env without a time
limit of its own (CliffWalking-v1, an under-trained deterministic policy walking into a wall)
would otherwise keep an evaluation stepping forever.

A VecEnv wrapper under VecMonitor, for the evaluation's one env: at the bound the episode ends
as a time limit ends one (done, `TimeLimit.truncated`, the last observation kept as
`terminal_observation`) and the env is reset, so the monitor and `evaluate_policy` count it as
any other episode.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper


class EpisodeCap(VecEnvWrapper):
    def __init__(self, venv: Any, steps: int) -> None:
        if venv.num_envs != 1:  # resetting one env of many is not a VecEnv's to do
            raise ValueError(f"EpisodeCap wraps an evaluation's one env, not {venv.num_envs}")
        super().__init__(venv)
        self.steps = steps
        self.length = 0

    def reset(self) -> Any:
        self.length = 0
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.length = 0 if dones[0] else self.length + 1
        if self.length >= self.steps:
            infos = [
                dict(infos[0], **{"TimeLimit.truncated": True, "terminal_observation": _first(obs)})
            ]
            dones = np.array([True])
            obs = self.venv.reset()
            self.length = 0
        return obs, rewards, dones, infos


def _first(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: v[0] for k, v in obs.items()}
    return obs[0]
