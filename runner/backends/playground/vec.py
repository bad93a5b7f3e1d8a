"""SB3 VecEnv over a MuJoCo Playground env: the shared adapter over functional JAX envs
(`backends.jax_vec`), under Playground's name (bench.json's `vec_env`)."""

from __future__ import annotations

from runner.backends.jax_vec import JaxVecEnv


class PlaygroundVecEnv(JaxVecEnv):
    """Playground's MJX envs through the VecEnv adapter: every step crosses from JAX to NumPy
    and torch and back (Brax's PPO, `brax_ppo`, keeps the whole loop in XLA)."""
