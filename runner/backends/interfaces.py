"""Env interfaces: what a backend's `make_env` makes, and what a trainer's loop steps
(`Trainer.ENV_INTERFACE`), each named for what it is, not for a backend that happens to make it.
Every backend makes SB3's VecEnv (`make_vec_env`); a backend that makes another declares it in
`Backend.interfaces`, and any trainer whose loop steps that interface trains on it (a MuJoCo
Playground backend making FUNCTIONAL_JAX_ENV trains with brax_ppo, without importing anything of
the brax backend).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

# A Stable-Baselines3 VecEnv of parallel.envs envs (`Backend.make_vec_env`).
SB3_VEC_ENV = "sb3-vec-env"
# `JaxEnv`: a functional JAX env (Brax's `Env` API: `reset(key)` and `step(state, action)` are
# pure functions of a state, so a loop can jit, vmap and scan them), unwrapped.
FUNCTIONAL_JAX_ENV = "functional-jax-env"
# `BatchedTorchEnv`: parallel.envs envs stepped as one batch of torch tensors on a device
# (Isaac Lab's DirectRLEnv / ManagerBasedRLEnv API, which RSL-RL's and skrl's wrappers take),
# launched in its own Python, and the function that ends that simulation.
BATCHED_TORCH_ENV = "batched-torch-env"
# One Gymnasium env (the `gymnasium.Env` API: no vector).
GYMNASIUM_ENV = "gymnasium-env"


class FramePainter(Protocol):
    """Draws states of one physics system: `frame(q, qd)` -> an H x W x 3 uint8 image of the
    pose given by joint positions `q` and velocities `qd`."""

    def frame(self, q: Any, qd: Any) -> Any: ...

    def close(self) -> None: ...


def jax_observation_size(env: Any) -> Any:
    """What Brax's `env.observation_size` gives (the last axis, or each key's shape), from the
    shapes of a traced reset: Brax's own property runs the reset, op by op, which for a physics
    pipeline compiles hundreds of small programs (3.5 s for inverted_pendulum on this CPU)."""
    import jax

    obs = jax.eval_shape(getattr(env, "unwrapped", env).reset, jax.random.PRNGKey(0)).obs
    if hasattr(obs, "shape"):
        return obs.shape[-1]
    return jax.tree_util.tree_map(lambda x: x.shape, obs)


@dataclass(frozen=True)
class JaxEnv:
    """FUNCTIONAL_JAX_ENV: the unwrapped env, how the manifest wraps it (episode length, action
    repeat), how a loop wraps it for training, and how its states are drawn for `eval.video`.

    `wrap(env, episode_length=, action_repeat=, randomization_fn=)`: the training wrapper
    (vmap, episode ends, automatic resets) Brax's `ppo.train` takes as `wrap_env_fn`; None:
    Brax's own (`brax.envs.wrappers.training.wrap`), which resets a Brax state's
    `pipeline_state` (a MuJoCo Playground state keeps its physics in `data` and brings its own).
    `pose(state)`: the joint positions and velocities (q, qd) of one env's state, traceable
    under jit, which `painter(size)` draws (size None: the env's own frame); both None when the
    env has no physics system to draw."""

    env: Any
    episode_length: int
    action_repeat: int
    painter: Callable[[tuple[int, int] | None], FramePainter] | None = None
    pose: Callable[[Any], tuple[Any, Any]] | None = None
    wrap: Callable[..., Any] | None = None

    def observation_size(self) -> Any:
        """The observation's size (an int, or each key's shape), without running a reset."""
        return jax_observation_size(self.env)

    @property
    def action_size(self) -> int:
        return int(self.env.action_size)

    def training_wrapper(self) -> Callable[..., Any]:
        """`wrap`, or Brax's own training wrapper (imports Brax)."""
        if self.wrap is not None:
            return self.wrap
        from brax.envs.wrappers.training import wrap

        return wrap


class BatchedTorchEnv(NamedTuple):
    """BATCHED_TORCH_ENV: the env, and `end()`, which closes its simulation (after `env.close()`).
    Unpacks as `(env, end)`."""

    env: Any
    end: Callable[[], None]
