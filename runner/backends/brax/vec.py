"""SB3 VecEnv over a Brax env: one jitted function steps every env and resets the finished ones.

Kept apart from brax.py because importing SB3 pulls torch and this module imports JAX. Each
reset draws a fresh key from one stream seeded by `seed`, so a seed gives the same episodes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv


def _jitted(env: Any, n_envs: int, episode_length: int, action_repeat: int) -> tuple[Any, Any]:
    import jax
    import jax.numpy as jnp
    from brax.envs.wrappers.training import EpisodeWrapper, VmapWrapper

    wrapped = VmapWrapper(EpisodeWrapper(env, episode_length, action_repeat))

    def reset(key: Any) -> Any:
        return wrapped.reset(jax.random.split(key, n_envs))

    def step(state: Any, action: Any, key: Any) -> tuple[Any, ...]:
        nxt = wrapped.step(state, action)
        done = nxt.done.astype(bool)
        fresh = reset(key)

        def pick(new: Any, old: Any) -> Any:
            return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)

        merged = jax.tree.map(pick, fresh, nxt)
        return merged, nxt.obs, nxt.reward, done, nxt.info["truncation"].astype(bool)

    return jax.jit(reset), jax.jit(step)


class BraxVecEnv(VecEnv):  # type: ignore[misc]
    def __init__(
        self, env: Any, *, n_envs: int, seed: int, episode_length: int, action_repeat: int = 1
    ):
        import jax

        self._reset, self._step = _jitted(env, n_envs, episode_length, action_repeat)
        self._env = env
        self._painter: Any = None  # eval.video's (backends.brax.frames), made on first use
        self._key = jax.random.PRNGKey(seed)
        self._state: Any = None
        self._actions: np.ndarray | None = None
        obs = gym.spaces.Box(-np.inf, np.inf, (env.observation_size,), np.float32)
        act = gym.spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)
        super().__init__(n_envs, obs, act)

    def _next_key(self) -> Any:
        import jax

        self._key, key = jax.random.split(self._key)
        return key

    def reset(self) -> np.ndarray:
        self._state = self._reset(self._next_key())
        return np.array(self._state.obs, dtype=np.float32)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.clip(np.asarray(actions, dtype=np.float32), -1.0, 1.0)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        self._state, last_obs, rewards, dones, truncs = self._step(
            self._state, self._actions, self._next_key()
        )
        # copies (np.array): a view of a JAX buffer is read-only, and SB3's VecEnvs hand out
        # arrays their callers may write to
        dones, truncs = np.array(dones), np.array(truncs)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            last = np.array(last_obs, dtype=np.float32)
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = last[i]
                infos[i]["TimeLimit.truncated"] = bool(truncs[i])
        obs = np.array(self._state.obs, dtype=np.float32)
        return obs, np.array(rewards, dtype=np.float32), dones, infos

    def close(self) -> None:
        self._state = None
        if self._painter is not None:
            self._painter.close()
            self._painter = None

    def get_images(self) -> list[Any]:
        """The first env's state as Brax draws it (eval.video), None for the others."""
        from runner.backends.brax.frames import Painter

        if self._painter is None:
            self._painter = Painter(self._env.sys)
        pipeline = self._state.pipeline_state
        first = self._painter.frame(np.asarray(pipeline.q[0]), np.asarray(pipeline.qd[0]))
        return [first] + [None] * (self.num_envs - 1)

    def seed(self, seed: int | None = None) -> list[None]:
        if seed is not None:
            import jax

            self._key = jax.random.PRNGKey(seed)
        return [None] * self.num_envs

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name, None)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError("Brax envs do not support set_attr")

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> Any:
        raise AttributeError("Brax envs do not support env_method")

    def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> Any:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else indices
