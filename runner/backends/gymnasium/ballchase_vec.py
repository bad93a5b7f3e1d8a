"""SB3 VecEnv over the BallChase surrogate: all envs in one NumPy call (kept apart: SB3 pulls
torch)."""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from runner.backends.gymnasium.ballchase import BallChase, Config, spaces
from runner.backends.replay import REPLAY, REPLAY_STATE, digest

# The simulation's state: what an exact resume saves per env.
STATE = ("agent_pos", "agent_vel", "move", "ball_pos", "ball_vel", "prev_dist", "steps", "catches",
         "rng")  # fmt: skip


class BallChaseVecEnv(VecEnv):  # type: ignore[misc]
    """As GodotVecEnv returns the game: a finished episode restarts at once, its last
    observation in `infos[i]["terminal_observation"]`, truncated (the game has no terminal
    state). Seeds: env i of a run seeded s is instance i of one Godot process for seed s."""

    def __init__(self, cfg: Config, *, n_envs: int, seed: int):
        self.sim = BallChase(n_envs, cfg, seed=seed)
        self._actions: np.ndarray | None = None
        super().__init__(n_envs, *spaces(cfg.continuous))

    def reset(self):
        seeds = [s for s in self._seeds if s is not None]
        if seeds:  # VecEnv.seed(s) asks for env i at s + i; the whole vector follows env 0's
            self.sim.seed(seeds[0])
        self._reset_seeds()
        self._reset_options()
        return self.sim.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, rewards, dones, final = self.sim.step(self._actions)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = final[i]
                infos[i]["TimeLimit.truncated"] = True
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "render_mode":
            return [None for _ in self._get_indices(indices)]
        return [getattr(self.sim, attr_name)[i] for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError("the BallChase surrogate's state is set through .sim, not set_attr")

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list[Any]:
        """The game's call methods: get_ball_position, get_catches; and an exact resume's
        (`replay`): each env's whole state as data, put back as it was."""
        if method_name == REPLAY_STATE:
            return [self._state(i) for i in self._get_indices(indices)]
        if method_name == REPLAY:
            return [self._restore(i, args[0]) for i in self._get_indices(indices)]
        if method_name == "get_ball_position":
            values: Any = self.sim.ball_pos.tolist()
        elif method_name == "get_catches":
            values = self.sim.catches.tolist()
        else:
            raise AttributeError(f"the BallChase surrogate has no method '{method_name}'")
        return [values[i] for i in self._get_indices(indices)]

    def _state(self, i: int) -> dict[str, Any]:
        """Env i's state arrays (its episode so far, its generator) as JSON numbers (float32
        and uint64 values are exact there); no actions to replay."""
        start = {k: getattr(self.sim, k)[i].tolist() for k in STATE}
        return {"start": start, "obs": digest(self.sim.observe()[i]), "actions": np.zeros((0,))}

    def _restore(self, i: int, state: dict[str, Any]) -> bool:
        for key in STATE:
            target = getattr(self.sim, key)
            target[i] = np.asarray(state["start"][key], dtype=target.dtype)
        return digest(self.sim.observe()[i]) == state["obs"]

    def env_is_wrapped(self, wrapper_class: type, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]
