"""Job `train`: learn for `train.timesteps`, TensorBoard per unit, checkpoints, final model.zip.

Interrupted (Ctrl-C, SIGTERM), a unit saves a checkpoint and says so in its status; the next
`--resume` continues from the newest checkpoint.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.jobs.common import load_model, make_env, make_model
from runner.jobs.resume import Start, newest_readable, save_atomic, save_checkpoint, totals
from runner.manifest.schema import Manifest
from runner.rundir import write_json_atomic


def _callback(cfg: Manifest, unit_dir: Path, started: float, start: Start):
    from stable_baselines3.common.callbacks import BaseCallback

    total = cfg.train.timesteps
    every = cfg.train.checkpoint_every

    class Progress(BaseCallback):
        """Writes progress.json about once a second and checkpoints every `checkpoint_every`."""

        def __init__(self) -> None:
            super().__init__()
            self.last_write = 0.0
            self.next_ckpt = (start.steps_done // every + 1) * every if every else None
            self.t0 = time.perf_counter()

        def train_wall_s(self) -> float:
            return start.wall_before_s + time.perf_counter() - self.t0

        def _on_step(self) -> bool:
            steps = self.model.num_timesteps
            if self.next_ckpt is not None and steps >= self.next_ckpt:
                save_checkpoint(self.model, unit_dir, self.train_wall_s())
                self.next_ckpt += every
            now = time.perf_counter()
            if now - self.last_write >= 1.0:
                self.last_write = now
                rate = (steps - start.steps_done) / max(now - self.t0, 1e-9)
                write_json_atomic(
                    unit_dir / "progress.json",
                    {"steps": steps, "total": total, "steps_per_s": rate, "started": started},
                    durable=False,
                )
            return True

    return Progress()


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    """Train one unit; returns fields for its status.json. Raises KeyboardInterrupt if stopped."""
    venv = make_env(cfg, seed=seeds["env"], log_dir=unit_dir)
    try:
        start = newest_readable(unit_dir, lambda path: load_model(cfg, path, venv))
        if start is not None:
            from stable_baselines3.common.logger import configure

            start.model.set_logger(configure(str(unit_dir / "tb"), ["tensorboard"]))
        else:
            start = Start(make_model(cfg, venv, seed=seeds["model"], tb_dir=unit_dir / "tb"))
        model = start.model
        started = time.time()
        callback = _callback(cfg, unit_dir, started, start)
        try:
            model.learn(
                total_timesteps=cfg.train.timesteps - start.steps_done,
                callback=callback,
                log_interval=cfg.train.log_interval,
                reset_num_timesteps=not start.steps_done,
                progress_bar=False,
            )
        except KeyboardInterrupt:
            save_checkpoint(model, unit_dir, callback.train_wall_s())
            raise
        segment = time.perf_counter() - callback.t0
        save_atomic(model, unit_dir / "model.zip")
        fields = totals(model.num_timesteps, start.steps_done, start.wall_before_s, segment)
        return {**fields, "train_started": started}
    finally:
        venv.close()
