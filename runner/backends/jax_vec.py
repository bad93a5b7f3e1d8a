"""SB3 VecEnv over a functional JAX env (`interfaces.JaxEnv`: Brax's envs, MuJoCo Playground's):
one jitted function steps every env and resets the finished ones. Shared by the backends whose
envs are functional JAX envs (each subclasses it, none imports another's).

Kept apart from the backends' modules because importing SB3 pulls torch and this module imports
JAX. Each reset draws a fresh key from one stream seeded by `seed`, so a seed gives the same
episodes. Episode ends and action repeats are Brax's wrappers' (`EpisodeWrapper` over
`VmapWrapper`), which step any env with Brax's `Env` API; the resets are this module's own (a
fresh reset merged in where an env is done), so they work on any state.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from runner.backends.interfaces import JaxEnv, jax_observation_size
from runner.backends.replay import REPLAY, REPLAY_STATE, digest

_NONE = np.zeros((0,))  # no actions to replay: the state itself is saved


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


def _row(saved: Any, arr: np.ndarray) -> np.ndarray:
    """One env's saved slice of `arr` as an array of its dtype. An empty slice comes back from
    JSON as `[]` whatever its shape (MJX keeps zero-size arrays, e.g. no contacts: (0, 5)):
    it takes the shape it had."""
    row = np.asarray(saved, dtype=arr.dtype)
    if row.size == 0 and math.prod(arr.shape[1:]) == 0:
        return row.reshape(arr.shape[1:])
    return row


class JaxVecEnv(VecEnv):
    """`task`'s env, `n_envs` of it, as an SB3 VecEnv (each backend names its own subclass)."""

    def __init__(self, task: JaxEnv, *, n_envs: int, seed: int):
        import jax

        env = task.env
        self._reset, self._step = _jitted(env, n_envs, task.episode_length, task.action_repeat)
        self._env, self._task = env, task
        self._painter: Any = None  # eval.video's (`task.painter`), made on first use
        self._key = jax.random.PRNGKey(seed)
        self._state: Any = None
        # the state whose arrays are host copies, and those copies (see _host)
        self._host_of: Any = None
        self._host_arrays: list[np.ndarray] = []
        self._actions: np.ndarray | None = None
        obs = gym.spaces.Box(-np.inf, np.inf, (jax_observation_size(env),), np.float32)
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
        """The first env's state as its backend draws it (eval.video), None for the others."""
        if self._task.painter is None or self._task.pose is None:
            raise RuntimeError("this env has no physics system to draw")
        if self._painter is None:
            self._painter = self._task.painter(None)
        q, qd = self._task.pose(self._state)
        first = self._painter.frame(np.asarray(q[0]), np.asarray(qd[0]))
        return [first] + [None] * (self.num_envs - 1)

    def seed(self, seed: int | None = None) -> list[None]:
        if seed is not None:
            import jax

            self._key = jax.random.PRNGKey(seed)
        return [None] * self.num_envs

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name, None)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"{type(self).__name__} does not support set_attr")

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> Any:
        """Only an exact resume's (`backends.replay` names): each env's state as data, and put
        back as it was."""
        if method_name == REPLAY_STATE:
            return [self._env_state(i) for i in self._indices(indices)]
        if method_name == REPLAY:
            return [self._put_env_state(i, args[0]) for i in self._indices(indices)]
        raise AttributeError(f"{type(self).__name__} does not support env_method")

    def _host(self) -> list[np.ndarray]:
        """Every array of the env state as a writable host copy, which the state itself becomes,
        made once per state: an exact resume asks for, then puts back, one env at a time, and a
        copy of the whole state per env would be quadratic in the number of envs (thousands on a
        GPU). The next step moves the state back to JAX's device."""
        import jax

        if self._host_of is not self._state:
            leaves, tree = jax.tree.flatten(self._state)
            self._host_arrays = [np.array(leaf) for leaf in leaves]
            self._state = self._host_of = jax.tree.unflatten(tree, self._host_arrays)
        return self._host_arrays

    def _env_state(self, i: int) -> dict[str, Any]:
        """Env i's slice of every array of the env state (JSON numbers: float32 and integer
        values are exact there), and the key stream's position; nothing to replay."""
        leaves = [leaf[i].tolist() for leaf in self._host()]
        start = {"leaves": leaves, "key": np.asarray(self._key).tolist()}
        return {"start": start, "obs": digest(np.asarray(self._state.obs[i])), "actions": _NONE}

    def _put_env_state(self, i: int, state: dict[str, Any]) -> bool:
        """Env i's arrays set from `state` (the others' kept), in a state of the same shapes:
        a fresh reset's when there is none yet. False, and nothing changed, when they do not
        fit; False when they do not give the saved observation."""
        import jax

        if self._state is None:
            self._state = self._reset(self._next_key())
        arrays, saved = self._host(), state["start"]["leaves"]
        if len(saved) != len(arrays):
            return False
        rows = [_row(v, arr) for arr, v in zip(arrays, saved, strict=True)]
        if any(row.shape != arr.shape[1:] for arr, row in zip(arrays, rows, strict=True)):
            return False
        for arr, row in zip(arrays, rows, strict=True):
            arr[i] = row
        self._key = jax.numpy.asarray(state["start"]["key"], dtype=jax.numpy.uint32)
        return bool(digest(np.asarray(self._state.obs[i])) == state["obs"])

    def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> Any:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else indices
