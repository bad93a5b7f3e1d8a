"""Stable-Baselines3's model files: saved atomically, a checkpoint with its statistics and the
time it took (`step-N.json`), and the env steps a saved model says it trained."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runner.record.checkpoint import CheckpointRecord, write_checkpoint_record
from runner.record.rundir import replace_via
from runner.trainers.resume import pins, prune


def save_atomic(model: Any, path: Path) -> None:
    """Save an SB3 model via a temporary file; the temporary file never outlives a failure."""
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.zip")  # SB3 adds .zip to a bare name
    replace_via(path, tmp, lambda t: model.save(str(t)))


def save_checkpoint(
    model: Any,
    unit_dir: Path,
    train_wall_s: float,
    extra: Callable[[Path], Sequence[str]] | None = None,
    keep: int = 0,
) -> None:
    """step-N.zip, then step-N.json with the training time it took to get there. `extra(path)`
    writes more files beside step-N.zip (the state of an exact resume) and names them; they
    are pinned with it. `keep` > 0: only the newest `keep` checkpoints stay (`prune`)."""
    from runner.trainers.sb3.files import checkpoint_stats, save_stats

    steps = model.num_timesteps
    path = unit_dir / "checkpoints" / f"step-{steps}.zip"
    save_stats(model, checkpoint_stats(path))  # first: a checkpoint on disk has its statistics
    names = list(extra(path)) if extra is not None else []
    save_atomic(model, path)
    files = pins(path.parent, [path.name, checkpoint_stats(path).name, *names])
    record = CheckpointRecord(timesteps=steps, train_wall_time_s=train_wall_s, files=files)
    write_checkpoint_record(path, record)
    if keep > 0:
        prune(unit_dir, keep)


def saved_steps(path: Path) -> int | None:
    """The env steps an SB3 model or checkpoint zip says it trained (`num_timesteps` in its
    `data` member); None when the file is no readable SB3 zip."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, RuntimeError):
        return None
    steps = data.get("num_timesteps") if isinstance(data, dict) else None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else None
