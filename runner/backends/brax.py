"""Brax environments: reported by `doctor`; running them is not implemented here yet."""

from runner.backends._unported import contract

available, env_ids, check_env, spaces, make_vec_env = contract("brax", "brax", "jax")
