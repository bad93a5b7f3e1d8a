"""Job `eval`: a fixed protocol on a fresh env: `eval.episodes` episodes, one env, its own seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from runner.jobs.common import load_model, make_env
from runner.manifest.schema import Manifest, ParallelSpec
from runner.rundir import write_json_atomic


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    from stable_baselines3.common.evaluation import evaluate_policy

    model_path = unit_dir / "model.zip"
    if not model_path.exists():
        raise FileNotFoundError(f"{model_path} is missing; run the train job first")
    one = ParallelSpec(envs=1, workers=1, mode="dummy")
    venv = make_env(cfg, seed=seeds["eval_env"], parallel=one, log_dir=unit_dir / "eval-logs")
    try:
        model = load_model(cfg, model_path, venv)
        returns, lengths = evaluate_policy(
            model,
            venv,
            n_eval_episodes=cfg.eval.episodes,
            deterministic=cfg.eval.deterministic,
            return_episode_rewards=True,
            warn=False,
        )
    finally:
        venv.close()
    assert isinstance(returns, list) and isinstance(lengths, list)  # return_episode_rewards=True
    returns = [float(r) for r in returns]
    result = {
        "episodes": [
            {"return": r, "length": int(n)} for r, n in zip(returns, lengths, strict=True)
        ],
        "mean": float(np.mean(returns)),
        "std": float(np.std(returns)),
        "deterministic": cfg.eval.deterministic,
        "n_episodes": len(returns),
        "seed": seeds["eval_env"],
    }
    write_json_atomic(unit_dir / "eval.json", result)
    return {"eval_mean": result["mean"], "eval_std": result["std"]}
