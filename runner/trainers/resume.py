"""Where a unit picks up after a stop: what a trainer calls before and after it trains.

- A unit whose training finished (model.zip beside a readable train.json) never trains again,
  and never rolls back to a checkpoint: it re-evaluates its final model.
- Otherwise it continues from the newest checkpoint that loads, falling back to older ones when
  the newest is damaged, or starts from scratch when none loads.
- Wall time and steps/s add up across segments: every checkpoint records the training time spent
  to reach it (`step-N.json` beside `step-N.zip`), and the final figures count from there.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.record.rundir import read_json, write_json_atomic

CKPT = re.compile(r"^step-(\d+)\.zip$")
TRAIN_RECORD = "train.json"


def save_atomic(model: Any, path: Path) -> None:
    """Save an SB3 model via a temporary file; the temporary file never outlives a failure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.zip")
    try:
        model.save(str(tmp))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save_checkpoint(model: Any, unit_dir: Path, train_wall_s: float) -> None:
    """step-N.zip, then step-N.json with the training time it took to get there."""
    steps = model.num_timesteps
    save_atomic(model, unit_dir / "checkpoints" / f"step-{steps}.zip")
    meta = {"timesteps": steps, "train_wall_time_s": train_wall_s}
    write_json_atomic(unit_dir / "checkpoints" / f"step-{steps}.json", meta)


def checkpoints(unit_dir: Path) -> list[tuple[int, Path]]:
    """Every checkpoint, newest first."""
    found = []
    for p in (unit_dir / "checkpoints").glob("step-*.zip"):
        m = CKPT.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found, reverse=True)


@dataclass
class Start:
    """Where training starts: the model, the steps already done and the time they took."""

    model: Any
    steps_done: int = 0
    wall_before_s: float = 0.0


def newest_readable(
    unit_dir: Path, load: Callable[[Path], Any], log: Callable[[str], None] | None = None
) -> Start | None:
    """The newest checkpoint `load` can read, skipping (and naming) damaged ones; None if none."""
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    for steps, path in checkpoints(unit_dir):
        try:
            model = load(path)
        except Exception as exc:  # a damaged zip fails in many ways (zipfile, torch, pickle)
            say(f"checkpoint {path.name} is unreadable ({type(exc).__name__}); trying an older one")
            continue
        meta = read_json(path.with_suffix(".json")) or {}
        return Start(model, steps, float(meta.get("train_wall_time_s") or 0.0))
    return None


def finished_training(unit_dir: Path) -> dict[str, Any] | None:
    """The train job's result if its training finished (then it must not train again)."""
    record = read_json(unit_dir / TRAIN_RECORD)
    if isinstance(record, dict) and (unit_dir / "model.zip").is_file():
        return record
    return None


def record_finished(unit_dir: Path, fields: dict[str, Any]) -> None:
    """Written after model.zip: from here on, resuming this unit only evaluates."""
    write_json_atomic(unit_dir / TRAIN_RECORD, fields)


def forget_finished(unit_dir: Path) -> None:
    """The final model turned out unreadable: train again from the newest checkpoint."""
    with contextlib.suppress(OSError):
        (unit_dir / TRAIN_RECORD).unlink()


def totals(steps: int, steps_done: int, wall_before_s: float, segment_s: float) -> dict[str, Any]:
    """The train job's status fields, counting every segment that led to the final model."""
    wall = wall_before_s + segment_s
    return {
        "timesteps_done": steps,
        "train_wall_time_s": wall,
        "train_steps_per_s": steps / wall if wall > 0 else 0.0,
        "resumed_from": steps_done or None,
    }


def train_once(
    unit_dir: Path, train: Callable[[], dict[str, Any]], final_ok: Callable[[Path], Any]
) -> dict[str, Any]:
    """Run `train` unless this unit's training already finished (then keep its final model and
    its figures, so a resumed unit re-evaluates the model it trained). `final_ok(model.zip)`
    raises if the final model is unreadable; then training continues from the newest checkpoint.
    """
    done = finished_training(unit_dir)
    if done is not None:
        try:
            final_ok(unit_dir / "model.zip")
            return done
        except Exception as exc:
            print(
                f"model.zip is unreadable ({type(exc).__name__}); training again from the "
                "newest readable checkpoint",
                file=sys.stderr,
                flush=True,
            )
            forget_finished(unit_dir)
    fields = train()
    record_finished(unit_dir, fields)
    return fields
