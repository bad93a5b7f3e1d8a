"""The SB3 trainer's training callback: progress.json about once a second, checkpoints at
rollout boundaries (`exact.Exact.save`), a stop request honoured at the next step or, where the
loop stops itself (`STOPS_ITSELF`), at the next rollout boundary with an exact checkpoint."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.record.progress import Progress, write_progress
from runner.trainers.base import STOP, STOPS_ITSELF
from runner.trainers.resume import Start
from runner.trainers.sb3.exact import Exact


def progress_callback(
    cfg: Manifest, unit_dir: Path, started: float, start: Start, exact: Exact
) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    from runner.trainers.kill import KillHook

    total = cfg.train.timesteps
    every = cfg.train.checkpoint_every
    kill = KillHook(total)

    class ProgressCallback(BaseCallback):
        """Writes progress.json about once a second and checkpoints every `checkpoint_every`."""

        def __init__(self) -> None:
            super().__init__()
            self.last_write = 0.0
            self.next_ckpt = (start.steps_done // every + 1) * every if every else None
            self.t0 = time.perf_counter()
            self.saved_at: int | None = None  # the step of this segment's last checkpoint
            self.logs_itself = False  # a resumed on-policy segment (`exact.logs_itself`)
            self.checkpoint_bytes: int | None = None  # the newest, for the progress display

        def _on_rollout_end(self) -> None:
            if self.logs_itself:
                model: Any = self.model
                iteration = model.num_timesteps // (model.n_steps * model.n_envs)
                if iteration % cfg.train.log_interval == 0:
                    model.dump_logs(iteration)

        def train_wall_s(self) -> float:
            return start.wall_before_s + time.perf_counter() - self.t0

        def _on_rollout_start(self) -> None:
            # A rollout boundary, after the previous rollout's update: a checkpoint taken here
            # holds every update of the steps it counts (one taken mid-rollout would count
            # steps whose update it lacks; at the budget, a resume would then skip the last
            # update). The loop ends at the budget before another rollout, so no checkpoint
            # is ever taken there: the final model.zip is the only record of a finished unit.
            # Asked to stop (STOPS_ITSELF): here, where the checkpoint is an exact one.
            steps, stop = self.model.num_timesteps, STOP.is_set()
            due = self.next_ckpt is not None and steps >= self.next_ckpt
            if due or (stop and steps > start.steps_done):
                exact.save(self.model, unit_dir, self.train_wall_s())
                self.saved_at = steps
                self.checkpoint_bytes = sum(
                    p.stat().st_size for p in (unit_dir / "checkpoints").glob(f"step-{steps}.*")
                )
                self.next_ckpt = (steps // every + 1) * every if every else None
            if stop:
                raise KeyboardInterrupt

        def _on_step(self) -> bool:
            # asked to stop, though the handler's exception was swallowed (or, with STOPS_ITSELF,
            # never raised: then at the next rollout boundary)
            if STOP.is_set() and not STOPS_ITSELF.is_set():
                raise KeyboardInterrupt
            steps = self.model.num_timesteps
            kill.check(steps)
            now = time.perf_counter()
            if now - self.last_write >= 1.0:
                self.last_write = now
                rate = (steps - start.steps_done) / max(now - self.t0, 1e-9)
                tick = Progress(
                    steps=steps,
                    total=total,
                    steps_per_s=rate,
                    started=started,
                    checkpoint_bytes=self.checkpoint_bytes or None,
                )
                write_progress(unit_dir, tick)
            return True

    return ProgressCallback()
