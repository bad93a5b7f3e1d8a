"""brax_ppo's `train`: Brax's `ppo.train` with progress (TensorBoard under SB3's tags,
progress.json), checkpoints through its `policy_params_fn`, and a resume from the newest readable
checkpoint."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.record.progress import Progress, write_progress
from runner.trainers.base import MODEL_FILE, REWARD_TAG, TB_DIR
from runner.trainers.brax_ppo import _jax_platform, jax_env, ppo_kwargs
from runner.trainers.brax_ppo.model import load_params, model_config, network_factory, save_params
from runner.trainers.results import TrainResult
from runner.trainers.resume import newest_readable, step_in_name

TAGS = {  # Brax's progress metric -> the TensorBoard tag SB3's trainer writes
    "episode/sum_reward": REWARD_TAG,
    "episode/length": "rollout/ep_len_mean",
    "episode/sps": "time/fps",
    "eval/episode_reward": "eval/mean_reward",
}


class _Progress:
    """progress_fn and policy_params_fn of ppo.train: TensorBoard, progress.json, checkpoints."""

    def __init__(self, cfg: Manifest, unit_dir: Path, config: dict[str, Any], done_before: int):
        from torch.utils.tensorboard import SummaryWriter

        self.cfg, self.unit_dir, self.config = cfg, unit_dir, config
        self.writer = SummaryWriter(str(unit_dir / TB_DIR))
        self.done_before, self.started, self.t0 = done_before, time.time(), time.perf_counter()
        self.latest: tuple[int, Any] | None = None
        every = cfg.train.checkpoint_every
        self.next_ckpt = (done_before // every + 1) * every if every else None

    def metrics(self, step: int, metrics: dict[str, Any]) -> None:
        step += self.done_before
        for name, tag in TAGS.items():
            if name in metrics:
                self.writer.add_scalar(tag, float(metrics[name]), step)
        self.writer.flush()
        rate = (step - self.done_before) / max(time.perf_counter() - self.t0, 1e-9)
        total = self.cfg.train.timesteps
        tick = Progress(steps=int(step), total=total, steps_per_s=float(rate), started=self.started)
        write_progress(self.unit_dir, tick)

    def params(self, step: int, make_policy: Any, params: Any) -> None:
        self.latest = (step + self.done_before, params)
        if self.next_ckpt is not None and self.latest[0] >= self.next_ckpt:
            self.checkpoint()
            self.next_ckpt += self.cfg.train.checkpoint_every

    def checkpoint(self) -> None:
        if self.latest is not None and self.latest[0] > self.done_before:
            step, params = self.latest
            save_params(self.unit_dir / "checkpoints" / f"step-{step}.zip", params, self.config)


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
    _jax_platform(cfg)
    from brax.training.agents.ppo import train as ppo

    task = jax_env(cfg)
    env = task.env
    kwargs, _ = ppo_kwargs(cfg, seeds, task)
    config = model_config(cfg, task)
    done_before, restore = 0, None
    # the newest checkpoint that loads, falling back past damaged ones (as SB3's trainer does)
    start = newest_readable(
        unit_dir, lambda path: load_params(path, config), cfg.train.timesteps, steps_of=step_in_name
    )
    if start is not None:
        done_before, restore = start.steps_done, start.model
        kwargs["num_timesteps"] = max(cfg.train.timesteps - done_before, 1)
    progress = _Progress(cfg, unit_dir, config, done_before)
    t0 = time.perf_counter()
    try:
        _, params, _ = ppo.train(
            environment=env,
            network_factory=network_factory(config["network"]),
            progress_fn=progress.metrics,
            policy_params_fn=progress.params,
            restore_params=restore,
            **kwargs,
        )
    except KeyboardInterrupt:
        progress.checkpoint()
        raise
    finally:
        progress.writer.close()
    wall = time.perf_counter() - t0
    save_params(unit_dir / MODEL_FILE, params, config)
    steps = progress.latest[0] if progress.latest else done_before + kwargs["num_timesteps"]
    return TrainResult(
        timesteps_done=steps,
        train_wall_time_s=wall,
        train_started=progress.started,
        train_steps_per_s=(steps - done_before) / wall if wall > 0 else 0.0,
        resumed_from=done_before or None,
    )
