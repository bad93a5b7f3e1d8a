"""The Stable-Baselines3 trainer (every SB3 / sb3-contrib algorithm), to the contract in `base.py`.

`train` learns for `train.timesteps` with TensorBoard per unit, checkpoints and a final
model.zip; interrupted (Ctrl-C, SIGTERM), it saves a checkpoint and the next `--resume`
continues from the newest one. `evaluate` runs the fixed evaluation protocol.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.backends import get_backend
from runner.backends.base import SB3_VEC_ENV
from runner.errors import FieldProblem
from runner.manifest.schema import Manifest
from runner.record.progress import Progress, write_progress
from runner.record.status import read_status, write_status
from runner.trainers.base import (
    MODEL_FILE,
    STOPS_ITSELF,
    TB_DIR,
    Trainer,
    episode_bound,
    write_eval,
)
from runner.trainers.resume import Start, newest_readable, save_atomic, totals, train_once
from runner.trainers.sb3 import algos
from runner.trainers.sb3.common import (
    load_model,
    make_env,
    make_model,
    one_env,
    with_video_env,
)
from runner.trainers.sb3.files import (
    STATS_FILE,
    checkpoint_stats,
    peek_params,
    require_stats,
    restore_stats,
    save_stats,
)
from runner.trainers.sb3.periodic import periodic
from runner.trainers.sb3.warm import start_files as start_files  # the contract's hook
from runner.trainers.sb3.warm import warm_start

ENV_INTERFACE = SB3_VEC_ENV  # every backend's: Stable-Baselines3 steps a VecEnv


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    """Train one unit; returns fields for its status.json. Raises KeyboardInterrupt if stopped.

    A unit whose training already finished keeps its final model (runner.trainers.resume); one that
    was stopped continues from its newest readable checkpoint.
    """

    def final_ok(path: Path) -> Any:
        if cfg.algo.normalize is not None:
            require_stats(unit_dir / STATS_FILE)
        return peek_params(path)

    return train_once(
        unit_dir,
        cfg.train.timesteps,
        lambda: _train(cfg, unit_dir, seeds),
        final_ok,
        pinned=start_files(cfg),
    )


def _resume_from(cfg: Manifest, path: Path, venv: Any, seed: int, exact: Any) -> Any:
    """A checkpoint and, when normalizing, the statistics saved with it, then the state of an
    exact resume (any of them unreadable or another unit's: the checkpoint is, and an older
    one is tried)."""
    model = load_model(cfg, path, venv, seed=seed, resume=True)
    if cfg.algo.normalize is not None:
        restore_stats(venv, checkpoint_stats(path))
    exact.load(model, path)
    return model


def _close_logger(model: Any) -> None:
    """Close the model's logger (its TensorBoard writer flushes and closes its file)."""
    logger = getattr(model, "_logger", None)  # none until `learn` sets it up
    if logger is not None:
        logger.close()


def _train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    from runner.trainers.sb3.exact import Exact, logs_itself
    from runner.trainers.sb3.progress import progress_callback

    venv = make_env(cfg, seed=seeds["env"], log_dir=unit_dir)
    exact = Exact(cfg, seeds)
    try:
        start = newest_readable(
            unit_dir,
            lambda path: _resume_from(cfg, path, venv, seeds["model"], exact),
            cfg.train.timesteps,
        )
        if start is not None:
            from stable_baselines3.common.logger import configure

            # one folder per segment: the report joins them at the step this one resumed from
            segment_dir = unit_dir / TB_DIR / f"resumed-{start.steps_done}"
            start.model.set_logger(configure(str(segment_dir), ["tensorboard"]))
            exact.after_logger(start.model)  # what the update before the stop recorded
            # every checkpoint step this unit was continued from, oldest first; recorded now,
            # so a segment stopped in turn still counts
            write_status(
                unit_dir, "running", resumes=[*read_status(unit_dir).resumes, start.steps_done]
            )
        else:
            start = Start(make_model(cfg, venv, seed=seeds["model"], tb_dir=unit_dir / TB_DIR))
            if cfg.train.init_from is not None:
                warm_start(start.model, venv, cfg)
        model = start.model
        exact.check_model(model)  # Dict observations, another replay buffer: approximate
        started = time.time()
        callback = progress_callback(cfg, unit_dir, started, start, exact)
        callback.logs_itself = logs_itself(model, start.steps_done, cfg.train.log_interval)
        during = periodic(cfg, unit_dir, seeds["eval_env"])  # eval.every; None when 0
        try:
            if exact.approximate is None:  # a stop request waits for the next rollout boundary
                STOPS_ITSELF.set()
            if cfg.train.timesteps > start.steps_done:  # 0 steps: a zero-shot transfer test
                model.learn(
                    total_timesteps=cfg.train.timesteps - start.steps_done,
                    callback=[callback, during] if during is not None else callback,
                    log_interval=None if callback.logs_itself else cfg.train.log_interval,
                    reset_num_timesteps=not start.steps_done,
                    progress_bar=False,
                )
        except KeyboardInterrupt:
            if callback.saved_at != model.num_timesteps:  # mid-rollout: one without state
                exact.save(model, unit_dir, callback.train_wall_s(), boundary=False)
            raise
        finally:
            STOPS_ITSELF.clear()
            _close_logger(model)  # the TensorBoard file whole, whatever ended the training
            if during is not None:
                during.close()
        segment = time.perf_counter() - callback.t0
        save_stats(model, unit_dir / STATS_FILE)  # first: a model on disk has its statistics
        save_atomic(model, unit_dir / MODEL_FILE)
        fields = totals(model.num_timesteps, start.steps_done, start.wall_before_s, segment)
        final = Progress(
            steps=model.num_timesteps,
            total=cfg.train.timesteps,
            steps_per_s=fields["train_steps_per_s"],
            started=started,
            finished=True,
        )
        write_progress(unit_dir, final)  # the last word, not the last one-second tick
        resumes = read_status(unit_dir).resumes
        pruned = {"pruned_at": during.pruned_at} if during and during.pruned_at else {}
        return {
            **fields,
            "train_started": started,
            "resumes": resumes,
            "resume": exact.level(),
            **pruned,
        }
    finally:
        venv.close()


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    """A fixed protocol on a fresh env: `eval.episodes` episodes, one env, its own seed."""
    from stable_baselines3.common.evaluation import evaluate_policy

    model_path = unit_dir / MODEL_FILE
    if not model_path.exists():
        raise FileNotFoundError(f"{model_path} is missing; run the train job first")
    one = one_env(cfg)
    video = cfg.eval.video
    equivalent = get_backend(cfg.env.backend).video_equivalent(cfg.env) if video else None
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

        blank = get_backend(cfg.env.backend).video_blank_hint(cfg.env)
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
    blank = get_backend(drawn.env.backend).video_blank_hint(env)
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


def bench(cfg: Manifest, seeds: dict[str, int]) -> dict[str, Any]:
    from runner.trainers.sb3.benchmark import measure_sb3

    return measure_sb3(cfg, seeds)


def first_step(cfg: Manifest, seeds: dict[str, int], mark: Any) -> None:
    from runner.trainers.sb3.benchmark import first_step as measure

    measure(cfg, seeds, mark)


def check_params(cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
    """A known algorithm, its constructor's argument names, the action spaces it supports; then
    what the installed sources say of its policy, device and params (`checks.sb3_issues`)."""
    from runner.trainers.sb3.checks import sb3_issues

    algo = cfg.algo
    found = algos.check(algo.name, algo.params, action_kind)
    out = [FieldProblem(("algo", *found[0].split(".")), found[1])] if found else []
    issues = sb3_issues(algo.name, algo.policy, algo.params, algo.device)
    return out + [FieldProblem(("algo", *loc), msg) for loc, msg in issues]


def check_limits(cfg: Manifest) -> list[FieldProblem]:
    return []  # what SB3 refuses is found by the dry construction (`validate --deep`)


def determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> dict[str, Any]:
    from runner.trainers.sb3.determinism import attempt

    return attempt(cfg, seeds, steps)


def dry_construct(cfg: Manifest) -> None:
    """One env of the backend, the model on it, one action (`dry.dry_construct`)."""
    from runner.trainers.sb3.dry import dry_construct as build

    build(cfg)


def deep_only(cfg: Manifest) -> list[str]:
    """What plain validate could not check from SB3's sources (`checks.deep_only`)."""
    from runner.trainers.sb3.checks import deep_only as unchecked

    return unchecked(cfg.algo.name, cfg.algo.policy, cfg.algo.params)


def space_problem(cfg: Manifest, name: str) -> str | None:
    """`tune.space: zoo`: rl-zoo3's sampler for the algorithm (`zoo_space`)."""
    if name != "zoo":
        return f"the sb3 trainer knows one search space by name, zoo (got {name!r})"
    from runner.trainers.sb3.zoo_space import problem

    return problem(cfg)


def sample_space(cfg: Manifest, name: str, trial: Any) -> dict[str, Any]:
    from runner.trainers.sb3.zoo_space import sample

    return sample(cfg, trial)


class SB3(Trainer):
    """Every Stable-Baselines3 and sb3-contrib algorithm, on the backend's VecEnv."""

    name = "sb3"
    ENV_INTERFACE = SB3_VEC_ENV
    COLD_START = True
    QUICK_EXIT = True  # _train closes the TensorBoard logger; every env is closed
    EXPORTS_SB3_POLICY = True
    PERIODIC_EVAL = True
    RECORDS_VIDEO = True  # evaluate records eval.video through runner.video

    # the hooks are this module's functions
    check_params = staticmethod(check_params)
    check_limits = staticmethod(check_limits)
    dry_construct = staticmethod(dry_construct)
    deep_only = staticmethod(deep_only)
    train = staticmethod(train)
    evaluate = staticmethod(evaluate)
    start_files = staticmethod(start_files)
    determinism_attempt = staticmethod(determinism_attempt)
    bench = staticmethod(bench)
    first_step = staticmethod(first_step)
    space_problem = staticmethod(space_problem)
    sample_space = staticmethod(sample_space)
