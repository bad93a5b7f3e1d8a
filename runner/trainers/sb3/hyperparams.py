"""The SB3 trainer's side of the manifest's hyperparameters: schedules and `policy_kwargs` names
become objects, and `algo.normalize` becomes SB3's VecNormalize with its statistics on disk.

Statistics live beside the model they belong to: `vecnormalize.npz` beside model.zip, and
`checkpoints/step-N.vecnormalize.npz` beside each checkpoint, written before the model so a
model on disk always has its statistics (arrays only: `runner.trainers.sb3.files`). Evaluation
loads them frozen, with reward normalization off, as rl-zoo3's enjoy.py does.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from runner.manifest.schedules import SCHEDULE_KEYS
from runner.manifest.schema import AlgoSpec, Manifest
from runner.trainers.sb3.hyper import SB3_OPTIMIZERS
from runner.trainers.sb3.options import options


class LinearSchedule:
    """From `start` (progress_remaining 1) to `end` (0). With end 0 this is exactly rl-zoo3's
    SimpleLinearSchedule (`progress_remaining * start`): 0.0 + p * (start - 0.0) == p * start."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def __call__(self, progress_remaining: float) -> float:
        return self.end + progress_remaining * (self.start - self.end)

    def __repr__(self) -> str:
        return f"LinearSchedule(start={self.start}, end={self.end})"


def _policy_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    import torch

    out = dict(kwargs)
    if isinstance(out.get("activation_fn"), str):
        out["activation_fn"] = getattr(torch.nn, out["activation_fn"])
    name = out.get("optimizer_class")
    if isinstance(name, str):
        module = (
            importlib.import_module(SB3_OPTIMIZERS[name]) if name in SB3_OPTIMIZERS else torch.optim
        )
        out["optimizer_class"] = getattr(module, name)
    return out


def _action_noise(spec: dict[str, Any], action_space: Any) -> Any:
    """rl-zoo3's noise_type/noise_std: zero mean, `std` on every action dimension."""
    import numpy as np
    from stable_baselines3.common import noise

    n = int(np.prod(action_space.shape))
    cls = (
        noise.NormalActionNoise if spec["type"] == "normal" else noise.OrnsteinUhlenbeckActionNoise
    )
    return cls(mean=np.zeros(n), sigma=float(spec["std"]) * np.ones(n))


def model_kwargs(algo: AlgoSpec, action_space: Any = None) -> dict[str, Any]:
    """The algorithm's constructor keywords: schedule mappings as callables, names as classes,
    YAML lists as the tuples SB3 expects (train_freq: [1, episode]), action noise sized to
    `action_space`."""
    out = dict(algo.params)
    if isinstance(out.get("action_noise"), dict):
        out["action_noise"] = _action_noise(out["action_noise"], action_space)
    for key in SCHEDULE_KEYS:
        value = out.get(key)
        if isinstance(value, dict) and value.get("schedule") == "linear":
            out[key] = LinearSchedule(float(value["start"]), float(value["end"]))
    if isinstance(out.get("policy_kwargs"), dict):
        out["policy_kwargs"] = _policy_kwargs(out["policy_kwargs"])
    if isinstance(out.get("train_freq"), list):
        out["train_freq"] = tuple(out["train_freq"])
    return out


def gamma(cfg: Manifest) -> float:
    """The discount VecNormalize uses for its return statistics: the algorithm's own."""
    if "gamma" in cfg.algo.params:
        return float(cfg.algo.params["gamma"])
    from runner.trainers.sb3.common import algo_class

    default = inspect.signature(algo_class(cfg.algo.name)).parameters.get("gamma")
    return float(default.default) if default is not None else 0.99


def normalize_env(
    venv: Any, cfg: Manifest, *, stats: Path | None, training: bool, synced: bool = False
) -> Any:
    """`venv` under VecNormalize when the manifest asks for it (its settings from the manifest).
    `stats`: statistics to start from (a resumed unit); evaluation (`training` False) needs
    them and freezes them, with reward normalization off (rl-zoo3's enjoy.py), unless `synced`:
    the caller copies training's statistics in before each use (evaluations during training)."""
    spec = options(cfg).normalize
    if spec is None:
        return venv
    from stable_baselines3.common.vec_env import VecNormalize

    from runner.trainers.sb3.files import require_stats, restore_stats

    if not training and not synced:
        assert stats is not None, "evaluation freezes the model's own statistics"
        require_stats(stats)
    env = VecNormalize(
        venv,
        training=training,
        norm_obs=spec.obs,
        norm_reward=spec.reward and training,
        clip_obs=spec.clip_obs,
        clip_reward=spec.clip_reward,
        gamma=gamma(cfg),
        epsilon=spec.epsilon,
    )
    if stats is not None:
        restore_stats(env, stats)
    return env
