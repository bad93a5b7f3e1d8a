"""SB3 VecEnv over a Brax env: the shared adapter over functional JAX envs
(`backends.jax_vec`), under Brax's name (bench.json's `vec_env`)."""

from __future__ import annotations

from runner.backends.jax_vec import JaxVecEnv


class BraxVecEnv(JaxVecEnv):
    """Brax's envs through the VecEnv adapter: Brax's documented slow path (every step crosses
    from JAX to NumPy and torch and back)."""
