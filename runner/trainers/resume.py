"""Where a unit picks up after a stop: what a trainer calls before and after it trains.

- A unit whose training finished never trains again, and never rolls back to a checkpoint: it
  re-evaluates its final model. Finished means a model.zip that trained the unit's budget, as the
  model itself says (a trainer with `abilities.CountsSteps` reads it, SB3's `num_timesteps`); a
  damaged or missing train.json beside it is rebuilt from the files rather than the work redone.
  A loop whose models hold no count is finished by its train.json.
- Otherwise it continues from the newest checkpoint that loads, falling back to older ones when
  the newest is damaged, or starts from scratch when none loads. A checkpoint's step is read
  from the checkpoint, never from its file name, so a renamed copy cannot skip training.
- Wall time and steps/s add up across segments: every checkpoint records the training time spent
  to reach it (`step-N.json` beside `step-N.zip`), and the final figures count from there.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import RunFileError
from runner.record.checkpoint import read_checkpoint_record, record_path
from runner.record.progress import read_progress
from runner.record.rundir import file_sha256, pin_mismatch
from runner.record.train import TRAIN_FILE, TrainRecord, TrainResult, read_train, write_train

CKPT = re.compile(r"^step-(\d+)\.zip$")
TRAIN_RECORD = TRAIN_FILE


def prune(unit_dir: Path, keep: int) -> None:
    """Remove every file of all but the newest `keep` checkpoints (step-N.zip, step-N.json and
    whatever else is named step-N.*), so a long run's checkpoints do not fill the disk."""
    for _, path in checkpoints(unit_dir)[keep:]:
        for member in path.parent.glob(f"{path.stem}.*"):
            with contextlib.suppress(OSError):
                member.unlink()


def pins(folder: Path, names: Sequence[str]) -> dict[str, str]:
    """name -> SHA-256 of each of `names` in `folder` that exists: what a later read checks
    before any library opens the file."""
    return {n: file_sha256(folder / n) for n in names if (folder / n).is_file()}


def check_pins(folder: Path, pinned: dict[str, str], what: str) -> None:
    """RunFileError when a file pinned in `pinned` ({name: sha256}, from a record this unit
    wrote) is gone or has other bytes; a record without pins (older runs) checks nothing."""
    for name, digest in sorted(pinned.items()):
        path = folder / name
        if now := pin_mismatch(path, digest):
            raise RunFileError(
                f"{path} {now}, not the file {what} recorded ({str(digest)[:12]}…): it changed "
                "after it was written, so it is not read"
            )


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


def step_in_name(path: Path) -> int | None:
    """The step a checkpoint's file name gives (for loops whose checkpoints do not hold it)."""
    m = CKPT.match(path.name)
    return int(m.group(1)) if m else None


def _by_content(
    unit_dir: Path,
    budget: int,
    say: Callable[[str], None],
    steps_of: Callable[[Path], int | None],
) -> list[tuple[int, Path]]:
    """(step, checkpoint) newest first by the step each holds; a name that disagrees with its
    content, or a step beyond this unit's budget, is said in the log (the latter is not this
    unit's)."""
    found = []
    for named, path in checkpoints(unit_dir):
        steps = steps_of(path)
        if steps is None:  # not even its step can be read: it cannot load either
            say(f"checkpoint {path.name} is unreadable (no step inside); trying an older one")
            continue
        if steps != named:
            say(f"checkpoint {path.name} holds step {steps}, not {named}; using step {steps}")
        if steps > budget:
            say(f"checkpoint {path.name} holds {steps} steps, over this unit's {budget}; skipped")
            continue
        if steps == budget:  # only a stop during the last update or the final save writes one
            say(
                f"checkpoint {path.name} was taken at the budget, before the final save "
                "finished; an older one is used"
            )
            continue
        found.append((steps, path))
    return sorted(found, key=lambda x: x[0], reverse=True)


def newest_readable(
    unit_dir: Path,
    load: Callable[[Path], Any],
    budget: int,
    log: Callable[[str], None] | None = None,
    *,
    steps_of: Callable[[Path], int | None],
) -> Start | None:
    """The newest checkpoint `load` can read, skipping (and naming) damaged ones; None if none.
    Its step is the one the checkpoint holds (`steps_of`: the loop's `CountsSteps.saved_steps`; a
    loop whose checkpoints hold no step passes `step_in_name`)."""
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    for steps, path in _by_content(unit_dir, budget, say, steps_of):
        meta = read_checkpoint_record(path)
        try:
            check_pins(path.parent, meta.files if meta else {}, record_path(path).name)
            model = load(path)
        except RunFileError as exc:
            say(f"{exc}; trying an older checkpoint")
            continue
        except Exception as exc:  # a damaged zip fails in many ways (zipfile, torch)
            say(f"checkpoint {path.name} is unreadable ({type(exc).__name__}); trying an older one")
            continue
        meta = read_checkpoint_record(unit_dir / "checkpoints" / f"step-{steps}.zip")
        took = meta.train_wall_time_s if meta is not None and meta.timesteps == steps else 0.0
        return Start(model, steps, took)
    return None


def _rebuilt(unit_dir: Path, steps: int) -> TrainRecord:
    """The train job's record for a final model whose train.json is missing or damaged, from the
    other files training left: the final progress.json (steps/s over all segments, the start
    of the last one) and status.json (earlier segments); figures it cannot find are None."""
    prog = read_progress(unit_dir)
    if prog is not None and not (prog.finished and prog.steps == steps):
        prog = None  # not this model's last word
    from runner.record.status import recorded_status

    status = recorded_status(unit_dir)
    rate = prog.steps_per_s if prog is not None and prog.steps_per_s > 0 else None
    resumes = list(status.resumes) if status is not None else []
    return TrainRecord(
        timesteps_done=steps,
        train_wall_time_s=steps / rate if rate else None,
        train_steps_per_s=rate,
        resumed_from=resumes[-1] if resumes else None,
        train_started=prog.started if prog is not None else None,
        resumes=resumes,
        recovered=f"{TRAIN_RECORD} was unreadable; rebuilt from model.zip and progress.json",
    )


def finished_training(
    unit_dir: Path,
    budget: int,
    steps_of: Callable[[Path], int | None] | None,
    pinned: Sequence[str] = (),
) -> TrainRecord | None:
    """The train job's record if its training finished (then it must not train again): model.zip
    trained at least `budget` steps by its own account (`steps_of`, the loop's
    `CountsSteps.saved_steps`). A missing or damaged train.json, or one that disagrees with the
    model, is rebuilt from the files and written back. A loop whose models hold no step count
    (`steps_of` None) is finished by its train.json."""
    if steps_of is None:
        found = read_train(unit_dir)
        if found is None or not (unit_dir / "model.zip").is_file():
            return None
        return found if found.timesteps_done >= budget else None
    steps = steps_of(unit_dir / "model.zip")
    if steps is None or steps < budget:
        return None
    record = read_train(unit_dir)
    if record is not None and record.timesteps_done == steps:
        return record
    return record_finished(unit_dir, _rebuilt(unit_dir, steps), pinned)


def record_finished(unit_dir: Path, result: TrainResult, pinned: Sequence[str] = ()) -> TrainRecord:
    """Written after model.zip: from here on, resuming this unit only evaluates. `pinned`: the
    model's files, whose SHA-256 every later read checks first (`check_final`)."""
    record = TrainRecord.model_validate({**result.fields(), "files": pins(unit_dir, pinned)})
    write_train(unit_dir, record)
    return record


def check_final(unit_dir: Path) -> None:
    """The final model's files are the ones training left (the hashes in train.json), before
    anything opens them: RunFileError, one line, if one changed."""
    record = read_train(unit_dir)
    check_pins(unit_dir, record.files if record is not None else {}, TRAIN_RECORD)


def forget_finished(unit_dir: Path) -> None:
    """The final model turned out unreadable: train again from the newest checkpoint."""
    with contextlib.suppress(OSError):
        (unit_dir / TRAIN_RECORD).unlink()


def totals(steps: int, steps_done: int, wall_before_s: float, segment_s: float) -> TrainResult:
    """The train job's figures, counting every segment that led to the final model."""
    wall = wall_before_s + segment_s
    return TrainResult(
        timesteps_done=steps,
        train_wall_time_s=wall,
        train_steps_per_s=steps / wall if wall > 0 else 0.0,
        resumed_from=steps_done or None,
    )


def train_once(
    unit_dir: Path,
    budget: int,
    train: Callable[[], TrainResult],
    final_ok: Callable[[Path], Any],
    steps_of: Callable[[Path], int | None] | None,
    pinned: Sequence[str] = ("model.zip",),
) -> TrainResult:
    """Run `train` unless this unit's training already finished (then keep its final model and
    its figures, so a resumed unit re-evaluates the model it trained). `final_ok(model.zip)`
    raises if the final model is unreadable; then training continues from the newest checkpoint.
    `steps_of`: the steps a model file holds (`CountsSteps.saved_steps`; None: it holds none). A
    training that ends short of `budget` steps fails the unit: it is never recorded as done.
    """
    done = finished_training(unit_dir, budget, steps_of, pinned)
    if done is not None:
        try:
            check_final(unit_dir)  # a model that changed after training is not read: as damaged
            final_ok(unit_dir / "model.zip")
            return done.result()
        except Exception as exc:
            why = str(exc) if isinstance(exc, RunFileError) else type(exc).__name__
            print(
                f"model.zip is unreadable ({why}); training again from the newest readable "
                "checkpoint",
                file=sys.stderr,
                flush=True,
            )
            forget_finished(unit_dir)
    result = train()
    # a study's pruner may stop it early (`pruned_at`): done, with the steps it trained
    if (result.timesteps_done or 0) < budget and not result.pruned_at:
        raise RuntimeError(
            f"training ended after {result.timesteps_done} of {budget} steps; the unit is not done"
        )
    record_finished(unit_dir, result, pinned)
    return result
