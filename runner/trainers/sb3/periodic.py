"""Evaluations during training (`eval.every`) and the stop a study's pruner asks for.

Every `eval.every` steps the policy plays `eval.every_episodes` deterministic episodes on an env
of its own (made once; each evaluation reseeds it with the unit's eval seed plus its number, so a
resumed unit evaluates as it would have without the stop; training never steps it, and the
evaluation draws from no generator training uses, so the training is the one it would be
without them). Each result goes to TensorBoard (eval/mean_reward, at the step it was due) and to
the unit's evals.json (`runner.record.evals`). When `rlcrate tune` has written a prune request
into the unit, training ends at the next check (about once a second), and the unit records the
steps it trained as `pruned_at`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.record.evals import add_evaluation, prune_requested

CHECK_EVERY_S = 1.0  # how often a training unit looks for a prune request


def _eval_env(cfg: Manifest, seed: int) -> Any:
    """One env as training's, unnormalized, then under a frozen VecNormalize whose statistics
    are copied from training's before each evaluation (SB3's EvalCallback does the same)."""
    from runner.trainers.sb3.common import make_env, one_env
    from runner.trainers.sb3.hyperparams import normalize_env

    plain = cfg.model_copy(update={"algo": cfg.algo.model_copy(update={"normalize": None})})
    venv = make_env(plain, seed=seed, parallel=one_env(plain), evaluation=True)
    return normalize_env(venv, cfg, stats=None, training=False, synced=True)


def periodic(cfg: Manifest, unit_dir: Path, seed: int) -> Any:
    """The callback (SB3's BaseCallback), or None when `eval.every` is 0."""
    if not cfg.eval.every:
        return None
    from stable_baselines3.common.callbacks import BaseCallback

    every = cfg.eval.every

    class Periodic(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.env: Any = None
            self.next_due = every
            self.next_check = 0.0
            self.pruned_at: int | None = None

        def _on_training_start(self) -> None:
            # a resumed unit: the next evaluation due after the steps it starts from
            self.next_due = (self.model.num_timesteps // every + 1) * every

        def _on_step(self) -> bool:
            steps = self.model.num_timesteps
            if steps >= self.next_due:
                self._evaluate(steps // every * every)
                self.next_due = (steps // every + 1) * every
                self.next_check = 0.0  # a request may follow this very evaluation
            now = time.perf_counter()
            if now < self.next_check:
                return True
            self.next_check = now + CHECK_EVERY_S
            if prune_requested(unit_dir) is not None:
                self.pruned_at = steps
                return False
            return True

        def _evaluate(self, step: int) -> None:
            from stable_baselines3.common.evaluation import evaluate_policy
            from stable_baselines3.common.vec_env import sync_envs_normalization

            if self.env is None:
                self.env = _eval_env(cfg, seed)
            # each evaluation's episodes from a seed of its own (the unit's eval seed and the
            # evaluation's number): the same after a resume as without a stop
            self.env.seed((seed + step // every) % 2**32)
            sync_envs_normalization(self.training_env, self.env)
            returns, _ = evaluate_policy(
                self.model,
                self.env,
                n_eval_episodes=cfg.eval.every_episodes,
                deterministic=cfg.eval.deterministic,
                return_episode_rewards=True,
                warn=False,
            )
            assert isinstance(returns, list)
            values = [float(r) for r in returns]
            add_evaluation(unit_dir, step, values)
            self._to_tensorboard(step, sum(values) / len(values))

        def _to_tensorboard(self, step: int, mean: float) -> None:
            # straight to the writer: the logger's dump would also write training's pending
            # values at this step
            from stable_baselines3.common.logger import TensorBoardOutputFormat

            for out in self.model.logger.output_formats:
                if isinstance(out, TensorBoardOutputFormat):
                    out.writer.add_scalar("eval/mean_reward", mean, step)

        def close(self) -> None:
            if self.env is not None:
                self.env.close()
                self.env = None

    return Periodic()
