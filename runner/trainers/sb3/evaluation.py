"""The sb3 trainer's `evaluate`: the fixed protocol on a fresh env, and `eval.video` (the
evaluation's own episodes recorded, or a rollout on an equivalent env that renders)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.trainers.base import MODEL_FILE, episode_bound, write_eval
from runner.trainers.results import EvalResult
from runner.trainers.sb3.common import load_model, make_env, one_env, video_ability, with_video_env
from runner.trainers.sb3.files import STATS_FILE


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
    """A fixed protocol on a fresh env: `eval.episodes` episodes, one env, its own seed."""
    from stable_baselines3.common.evaluation import evaluate_policy

    model_path = unit_dir / MODEL_FILE
    if not model_path.exists():
        raise FileNotFoundError(f"{model_path} is missing; run the train job first")
    one = one_env(cfg)
    video = cfg.eval.video
    equivalent = video_ability(cfg).video_equivalent(cfg.env) if video else None
    if equivalent is not None:  # the video is a rollout of its own, after the evaluation
        fields = evaluate(
            cfg.model_copy(update={"eval": cfg.eval.model_copy(update={"video": None})}),
            unit_dir,
            seeds,
        )
        record_equivalent(cfg, unit_dir, seeds, *equivalent)
        return fields
    # normalized: the training statistics, frozen, rewards as the env gives them (enjoy.py)
    venv = make_env(
        with_video_env(cfg) if video else cfg,
        seed=seeds["eval_env"],
        parallel=one,
        log_dir=unit_dir / "eval-logs",
        stats=unit_dir / STATS_FILE,
        training=False,
        evaluation=True,
    )
    if video:  # the same episodes, their frames written as they are stepped
        from runner.video.capture import recording

        blank = video_ability(cfg).video_blank_hint(cfg.env)
        venv = recording(venv, video, unit_dir, blank_hint=blank)
    try:
        # The global generators seeded as SB3's own load seeded them (with the model's seed)
        # before the policy was built; the env keeps its eval seed (seed None: SB3 would
        # reseed `venv` with the training seed, replacing the eval seed of every env that
        # takes one).
        from stable_baselines3.common.utils import set_random_seed

        set_random_seed(seeds["model"])
        model = load_model(cfg, model_path, venv, seed=None)
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
    steps, source, _ = episode_bound(cfg)
    fields = write_eval(unit_dir, cfg, seeds["eval_env"], returns, lengths, (steps, source))
    if video:  # after eval.json: a video that cannot be written fails the unit, not its eval
        from runner.video.capture import finish

        finish(venv, video, unit_dir)
    return fields


def record_equivalent(
    cfg: Manifest, unit_dir: Path, seeds: dict[str, int], env: Any, note: str
) -> None:
    """`eval.video` through an equivalent env (`Backend.video_equivalent`): the model rebuilt on
    it (the same spaces) plays `eval.video.episodes` deterministic episodes, recorded."""
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.utils import set_random_seed

    from runner.video.capture import finish, recording

    video = cfg.eval.video
    assert video is not None
    drawn = cfg.model_copy(update={"env": env})
    one = one_env(drawn)
    venv = make_env(
        drawn,
        seed=seeds["eval_env"],
        parallel=one,
        stats=unit_dir / STATS_FILE,
        training=False,
        evaluation=True,
    )
    blank = video_ability(drawn).video_blank_hint(env)
    venv = recording(venv, video, unit_dir, blank_hint=blank)
    try:
        set_random_seed(seeds["model"])
        model = load_model(cfg, unit_dir / MODEL_FILE, venv, seed=None)
        evaluate_policy(
            model, venv, n_eval_episodes=video.episodes, deterministic=cfg.eval.deterministic,
            warn=False,
        )  # fmt: skip
    finally:
        venv.close()
    finish(venv, video, unit_dir, equivalent=note)
