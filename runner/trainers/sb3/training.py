"""The sb3 trainer's `train`: learn for `train.timesteps` with TensorBoard per unit, checkpoints
and a final model.zip; interrupted (Ctrl-C, SIGTERM), it saves a checkpoint and the next
`--resume` continues from the newest one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.record.progress import Progress, write_progress
from runner.record.status import read_status, write_status
from runner.trainers.base import MODEL_FILE, STOPS_ITSELF, TB_DIR
from runner.trainers.results import TrainResult
from runner.trainers.resume import Start, newest_readable, totals, train_once
from runner.trainers.sb3.checkpoints import save_atomic, saved_steps
from runner.trainers.sb3.common import load_model, make_model
from runner.trainers.sb3.common import make_env as make_vec_env
from runner.trainers.sb3.files import (
    STATS_FILE,
    checkpoint_stats,
    peek_params,
    require_stats,
    restore_stats,
    save_stats,
)
from runner.trainers.sb3.options import options
from runner.trainers.sb3.periodic import periodic
from runner.trainers.sb3.warm import start_files, warm_start


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
    """Train one unit; returns fields for its status.json. Raises KeyboardInterrupt if stopped.

    A unit whose training already finished keeps its final model (runner.trainers.resume); one that
    was stopped continues from its newest readable checkpoint.
    """

    def final_ok(path: Path) -> Any:
        if options(cfg).normalize is not None:
            require_stats(unit_dir / STATS_FILE)
        return peek_params(path)

    return train_once(
        unit_dir,
        cfg.train.timesteps,
        lambda: _train(cfg, unit_dir, seeds),
        final_ok,
        saved_steps,
        pinned=start_files(cfg),
    )


def _resume_from(cfg: Manifest, path: Path, venv: Any, seed: int, exact: Any) -> Any:
    """A checkpoint and, when normalizing, the statistics saved with it, then the state of an
    exact resume (any of them unreadable or another unit's: the checkpoint is, and an older
    one is tried)."""
    model = load_model(cfg, path, venv, seed=seed, resume=True)
    if options(cfg).normalize is not None:
        restore_stats(venv, checkpoint_stats(path))
    exact.load(model, path)
    return model


def _close_logger(model: Any) -> None:
    """Close the model's logger (its TensorBoard writer flushes and closes its file)."""
    logger = getattr(model, "_logger", None)  # none until `learn` sets it up
    if logger is not None:
        logger.close()


def _train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
    from runner.trainers.sb3.exact import Exact, logs_itself
    from runner.trainers.sb3.progress import progress_callback

    venv = make_vec_env(cfg, seed=seeds["env"], log_dir=unit_dir)
    exact = Exact(cfg, seeds)
    try:
        start = newest_readable(
            unit_dir,
            lambda path: _resume_from(cfg, path, venv, seeds["model"], exact),
            cfg.train.timesteps,
            steps_of=saved_steps,
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
            steps_per_s=fields.train_steps_per_s or 0.0,
            started=started,
            finished=True,
        )
        write_progress(unit_dir, final)  # the last word, not the last one-second tick
        result = fields.model_copy(
            update={"train_started": started, "resumes": read_status(unit_dir).resumes,
                    "resume": exact.level()}
        )  # fmt: skip
        if during is not None and during.pruned_at:
            result.pruned_at = during.pruned_at
        return result
    finally:
        venv.close()
