"""SB3 VecEnv over an EnvPool pool (kept apart: importing SB3 pulls torch)."""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv


class EnvPoolVecEnv(VecEnv):  # type: ignore[misc]
    def __init__(self, pool: Any):
        self.pool = pool
        self._actions: np.ndarray | None = None
        super().__init__(pool.config["num_envs"], pool.observation_space, pool.action_space)

    def reset(self):
        obs, _ = self.pool.reset()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, rewards, terms, truncs, info = self.pool.step(self._actions)
        dones = np.logical_or(terms, truncs)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = np.flatnonzero(dones)
        if finished.size:
            obs = obs.copy()
            reset_obs, _ = self.pool.reset(finished.astype(np.int32))
            for k, i in enumerate(finished):
                infos[i]["terminal_observation"] = obs[i].copy()
                infos[i]["TimeLimit.truncated"] = bool(truncs[i] and not terms[i])
                obs[i] = reset_obs[k]
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        close = getattr(self.pool, "close", None)
        if close:
            close()

    def seed(self, seed: int | None = None):
        return [None] * self.num_envs  # seeded at construction (EnvPool requires it)

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.pool, attr_name, None)] * len(self._get_indices(indices))

    def set_attr(self, attr_name, value, indices=None) -> None:
        raise AttributeError("EnvPool envs do not support set_attr")

    def env_method(self, method_name, *args, indices=None, **kwargs):
        raise AttributeError("EnvPool envs do not support env_method")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._get_indices(indices))

    def _get_indices(self, indices):
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else indices
