"""Brax's own PPO (`brax.training.agents.ppo.train`), to the trainer contract in `base.py`.

`algo.params` are `ppo.train`'s keyword arguments, plus `network` (keyword arguments of
`make_ppo_networks`, e.g. hidden layer sizes). The runner supplies the env, `num_timesteps`
(train.timesteps), `num_envs` (parallel.envs), `seed` (the unit's model seed), `episode_length`
and `action_repeat` (env.kwargs.episode_length, env.action_repeat), and defaults `num_evals` to 0
(Brax's in-loop evaluation is replaced by the eval job) and `log_training_metrics` to true, whose
mean training-episode return goes to TensorBoard under REWARD_TAG as SB3's `ep_rew_mean` does.

Its modules: `training` (train), `evaluation` (evaluate, eval.video), `model` (model.zip),
`params` (what validate checks), `benchmark` (bench), `options` (its `algo` options).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, cast

from runner.backends.base import FUNCTIONAL_JAX_ENV, JaxEnv
from runner.errors import FieldProblem
from runner.manifest.schema import Manifest
from runner.trainers.abilities import RecordsVideo
from runner.trainers.base import Trainer, options_of
from runner.trainers.brax_ppo import params as checks
from runner.trainers.brax_ppo.options import BraxPPOOptions
from runner.trainers.results import BenchResult, DeterminismAttempt, EvalResult, TrainResult

ENV_INTERFACE = FUNCTIONAL_JAX_ENV  # a functional JAX env, stepped inside the jitted loop


def _jax_platform(cfg: Manifest) -> None:
    """Pin JAX to the manifest's device before JAX starts (cpu stays cpu on a GPU machine)."""
    if options_of(cfg, BraxPPOOptions).device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")


def jax_env(cfg: Manifest) -> JaxEnv:
    """The unit's env as its backend makes it for this loop (ENV_INTERFACE)."""
    from runner.backends import get_backend

    backend = get_backend(cfg.env.backend)
    return cast(JaxEnv, backend.make_env(cfg.env, cfg.parallel, interface=ENV_INTERFACE, seed=0))


def ppo_kwargs(
    cfg: Manifest, seeds: dict[str, int], task: JaxEnv
) -> tuple[dict[str, Any], dict[str, Any]]:
    params = dict(cfg.algo.params)
    network = dict(params.pop("network", {}) or {})
    kwargs: dict[str, Any] = {
        "wrap_env_fn": task.wrap,  # None: Brax's own training wrapper
        "num_evals": 0,
        "log_training_metrics": True,
        "episode_length": task.episode_length,
        "action_repeat": task.action_repeat,
        **params,
        "num_timesteps": cfg.train.timesteps,
        "num_envs": cfg.parallel.envs,
        "seed": seeds["model"],
    }
    return kwargs, network


def determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> DeterminismAttempt:
    """Brax's loop runs jitted end to end (no step to watch from outside): the attempt trains
    about `steps` env steps (whole training steps of batch_size x unroll_length x
    num_minibatches) and is compared on its final parameters."""
    _jax_platform(cfg)
    import jax
    import numpy as np
    from brax.training.agents.ppo import train as ppo

    from runner.trainers.base import digest
    from runner.trainers.brax_ppo.model import network_factory

    task = jax_env(cfg)
    kwargs, network = ppo_kwargs(cfg, seeds, task)
    kwargs["num_timesteps"] = steps
    trained = [0]
    t0 = time.perf_counter()
    _, params, _ = ppo.train(
        environment=task.env,
        network_factory=network_factory(network),
        policy_params_fn=lambda step, make_policy, params: trained.__setitem__(0, int(step)),
        **kwargs,
    )
    leaves = jax.tree_util.tree_leaves(jax.tree.map(np.asarray, params))
    return DeterminismAttempt(
        steps=[],
        params=digest({str(i): leaf for i, leaf in enumerate(leaves)}),
        env_steps=trained[0],
        compares=f"the final parameters after {trained[0]} env steps",
        seconds=time.perf_counter() - t0,
    )


class BraxPPO(Trainer[BraxPPOOptions], RecordsVideo):
    """Brax's own PPO, jitted end to end on a functional JAX env (Brax's, or any backend's that
    makes FUNCTIONAL_JAX_ENV). Its evaluation records `eval.video` from the states it keeps,
    drawn by the env's painter (`JaxEnv.painter`)."""

    name = "brax_ppo"
    Options = BraxPPOOptions
    ALGORITHMS = ("brax_ppo",)
    ENV_INTERFACE = ENV_INTERFACE

    def check_params(self, cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
        return checks.check_params(cfg, action_kind)

    def check_limits(self, cfg: Manifest) -> list[FieldProblem]:
        return checks.check_limits(cfg)

    def dry_construct(self, cfg: Manifest) -> None:
        """The env, as its units make it; ppo.train builds its networks inside its jitted loop:
        what it asserts on first is checked by `check_limits`, and its params by
        `check_params`."""
        _jax_platform(cfg)
        jax_env(cfg)

    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
        from runner.trainers.brax_ppo.training import train

        return train(cfg, unit_dir, seeds)

    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
        from runner.trainers.brax_ppo.evaluation import evaluate

        return evaluate(cfg, unit_dir, seeds)

    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> DeterminismAttempt:
        return determinism_attempt(cfg, seeds, steps)

    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
        """Env-only and training steps/s of Brax's own loop (`benchmark`)."""
        _jax_platform(cfg)
        from runner.trainers.brax_ppo.benchmark import bench as measure

        return measure(cfg, seeds)
