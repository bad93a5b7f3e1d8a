"""The SB3 trainer's exact resume, as the training loop uses it: which checkpoints hold state,
and whose state it is.

- `Exact.save(model, unit_dir, wall)`: a checkpoint at a rollout boundary with its state
  (`state.write_state`), the older ones pruned to `train.keep_checkpoints`.
- `Exact.load(model, path)`: the state put back (`state.restore`); `Exact.after_logger(model)`
  puts back the logger's pending values once the resumed segment's logger is set.

The loop can be killed for a resume check (`runner.trainers.kill`, which the progress callback
calls at every step).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.backends import get_backend
from runner.backends.base import resume_approximate
from runner.manifest.schema import Manifest
from runner.trainers.sb3 import state
from runner.trainers.sb3.checkpoints import save_checkpoint


def logs_itself(model: Any, steps_done: int, log_interval: int) -> bool:
    """Whether a resumed segment's logs are written by the callback (`learn` then gets
    `log_interval=None`). On-policy `learn` counts its iterations from 0 at every call and logs
    when that count is a multiple of `log_interval`, so a segment resumed from iteration I0
    would log at other steps than the uninterrupted unit; the callback logs at the unit's own
    multiples instead, where `learn` would have (after the rollout, before its update)."""
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

    return isinstance(model, OnPolicyAlgorithm) and log_interval > 1 and steps_done > 0


class Exact:
    """One unit's exact-resume settings: its identity and whether its envs can be replayed."""

    def __init__(self, cfg: Manifest, seeds: dict[str, int]) -> None:
        self.approximate = resume_approximate(get_backend(cfg.env.backend), cfg.env)
        self.keep = cfg.train.keep_checkpoints
        self.identity = {
            "algo": cfg.algo.name,
            "backend": cfg.env.backend,
            "env": cfg.env.id,
            "n_envs": cfg.parallel.envs,
            "seed": seeds["model"],
            "env_seed": seeds["env"],
        }
        self._pending: Callable[[], None] | None = None

    def check_model(self, model: Any) -> None:
        """What of this model a checkpoint cannot hold makes its resume approximate too: Dict
        observations (SB3's last observation is then a mapping) and a replay buffer other than
        a plain ReplayBuffer (Dict, HER), which are not saved."""
        if self.approximate is not None:
            return
        from gymnasium import spaces

        from runner.trainers.sb3.state import saveable_buffer

        buffer = getattr(model, "replay_buffer", None)
        if isinstance(model.observation_space, spaces.Dict):
            self.approximate = "Dict observations: checkpoints do not hold the last observation"
        elif buffer is not None and not saveable_buffer(buffer):
            self.approximate = (
                f"its replay buffer ({type(buffer).__name__}) is not saved, only a plain "
                "ReplayBuffer"
            )

    def level(self) -> str:
        """`exact`, or `approximate: why`."""
        return f"approximate: {self.approximate}" if self.approximate else "exact"

    def save(self, model: Any, unit_dir: Path, wall_s: float, *, boundary: bool = True) -> None:
        """A checkpoint; at a rollout boundary with its state (a stop mid-rollout has none:
        the rollout in progress cannot be saved, so resuming from it is approximate)."""

        def extra(path: Path) -> list[str]:
            return state.write_state(model, path, self.identity, self.approximate is None)

        save_checkpoint(model, unit_dir, wall_s, extra if boundary else None, self.keep)

    def load(self, model: Any, path: Path) -> None:
        def say(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        self._pending = state.restore(model, path, self.identity, say)
        if self.approximate and self._pending is not None:
            say(f"resume is approximate: {self.approximate}")

    def after_logger(self, model: Any) -> None:
        if self._pending is not None:
            self._pending()
