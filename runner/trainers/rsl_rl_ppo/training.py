"""rsl_rl_ppo's `train`: RSL-RL's `OnPolicyRunner.learn`, with TensorBoard by env steps,
progress.json and checkpoints after its iterations, and a resume from the newest readable
checkpoint."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.record.checkpoint import CheckpointRecord, write_checkpoint_record
from runner.record.progress import Progress, write_progress
from runner.record.status import read_status
from runner.trainers.base import MODEL_FILE, REWARD_TAG, TB_DIR
from runner.trainers.results import TrainResult
from runner.trainers.resume import newest_readable, train_once
from runner.trainers.rsl_rl_ppo import (
    LOG_DIR,
    _load,
    _runner,
    _saved,
    _setup,
    iteration_steps,
    saved_steps,
)


def save(runner: Any, path: Path, iterations: int, steps: int, wall_s: float) -> None:
    """RSL-RL's own save, written atomically; with step-N.json beside a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.zip")
    runner.current_learning_iteration = iterations
    try:
        runner.save(str(tmp), infos={"timesteps": steps, "train_wall_time_s": wall_s})
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if path.parent.name == "checkpoints":
        write_checkpoint_record(path, CheckpointRecord(timesteps=steps, train_wall_time_s=wall_s))


class _Hooks:
    """After each of RSL-RL's iterations: TensorBoard by env steps, progress.json, checkpoints."""

    def __init__(
        self, cfg: Manifest, unit_dir: Path, runner: Any, batch: int, done: tuple[int, float]
    ) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.cfg, self.unit_dir, self.runner, self.batch = cfg, unit_dir, runner, batch
        self.iters_before, self.wall_before = done
        self.iters: int = self.iters_before
        tb = unit_dir / TB_DIR
        self.writer = SummaryWriter(str(tb / f"resumed-{self.steps}" if self.iters else tb))
        self.started, self.t0 = time.time(), time.perf_counter()
        every = cfg.train.checkpoint_every
        self.next_ckpt = (self.steps // every + 1) * every if every else None
        original = runner.logger.log

        def log(*args: Any, **kwargs: Any) -> None:
            original(*args, **kwargs)
            self.iteration(int(kwargs["it"]))

        runner.logger.log = log

    @property
    def steps(self) -> int:
        return self.iters * self.batch

    def wall(self) -> float:
        return self.wall_before + time.perf_counter() - self.t0

    def iteration(self, it: int) -> None:
        import statistics

        self.iters = it + 1
        logger, steps = self.runner.logger, self.steps
        if logger.rewbuffer:
            self.writer.add_scalar(REWARD_TAG, statistics.mean(logger.rewbuffer), steps)
            self.writer.add_scalar("rollout/ep_len_mean", statistics.mean(logger.lenbuffer), steps)
        rate = (steps - self.iters_before * self.batch) / max(time.perf_counter() - self.t0, 1e-9)
        self.writer.add_scalar("time/fps", rate, steps)
        self.writer.flush()
        total = self.cfg.train.timesteps
        tick = Progress(steps=steps, total=total, steps_per_s=rate, started=self.started)
        write_progress(self.unit_dir, tick)
        if self.next_ckpt is not None and steps >= self.next_ckpt:
            self.checkpoint()
            self.next_ckpt = (steps // self.cfg.train.checkpoint_every + 1) * (
                self.cfg.train.checkpoint_every
            )

    def checkpoint(self) -> None:
        if self.iters > self.iters_before:
            path = self.unit_dir / "checkpoints" / f"step-{self.steps}.zip"
            save(self.runner, path, self.iters, self.steps, self.wall())


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
    """Train one unit (continuing from its newest readable checkpoint)."""

    def final_ok(path: Path) -> None:
        _saved(path)

    budget = cfg.train.timesteps
    return train_once(
        unit_dir, budget, lambda: _train(cfg, unit_dir, seeds), final_ok, steps_of=saved_steps
    )


def _train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
    env, agent, end = _setup(cfg, unit_dir, cfg.parallel.envs, seeds["env"], seeds)
    try:
        runner = _runner(env, agent, unit_dir / LOG_DIR)
        batch = iteration_steps(agent, cfg.parallel.envs)
        total_iters = max(1, math.ceil(cfg.train.timesteps / batch))
        start = newest_readable(
            unit_dir,
            lambda p: _load(runner, p, agent.device),
            cfg.train.timesteps,
            steps_of=saved_steps,
        )
        before = (start.steps_done // batch, start.wall_before_s) if start else (0, 0.0)
        runner.current_learning_iteration = before[0]
        hooks = _Hooks(cfg, unit_dir, runner, batch, before)
        try:
            runner.learn(
                num_learning_iterations=max(total_iters - before[0], 0),
                init_at_random_ep_len=agent.init_at_random_ep_len,
            )
        except KeyboardInterrupt:
            hooks.checkpoint()
            raise
        finally:
            hooks.writer.close()
            _close_own_writer(runner)
        return _finish(cfg, unit_dir, runner, hooks, before[0] * batch)
    finally:
        env.close()
        end()


def _close_own_writer(runner: Any) -> None:
    """Close RSL-RL's own TensorBoard writer (its runner leaves it open, flushing every 10 s)."""
    writer = getattr(getattr(runner, "logger", None), "writer", None)
    if writer is not None and hasattr(writer, "close"):
        writer.close()


def _finish(cfg: Manifest, unit_dir: Path, runner: Any, hooks: _Hooks, before: int) -> TrainResult:
    """model.zip, the last progress.json and the train job's status fields."""
    wall, steps = hooks.wall(), hooks.steps
    save(runner, unit_dir / MODEL_FILE, hooks.iters, steps, wall)
    rate = steps / wall if wall > 0 else 0.0
    final = Progress(steps=steps, total=cfg.train.timesteps, finished=True, steps_per_s=rate,
                     started=hooks.started)  # fmt: skip
    write_progress(unit_dir, final)
    resumes = read_status(unit_dir).resumes + ([before] if before else [])
    return TrainResult(
        timesteps_done=steps,
        train_wall_time_s=wall,
        train_started=hooks.started,
        train_steps_per_s=rate,
        resumed_from=before or None,
        resumes=resumes,
    )
