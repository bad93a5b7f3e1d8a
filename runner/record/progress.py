"""A unit's progress.json: its training's steps so far, about once a second while it trains, and
the final count once it ends. One typed model, written here alone (every trainer's loop calls
`write_progress`) and read through `read_progress` (the progress display, `status`, and a lost
train.json rebuilt from the last one).

Advisory while it trains: a tick is not fsynced, and an archive leaves the file out.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field

from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

PROGRESS_FILE = "progress.json"


class Progress(Versioned):
    """progress.json."""

    # a count is a number, not "100" or true
    model_config = ConfigDict(extra="forbid", strict=True)
    FORMAT = Format("progress.json", 1, (stamped,))

    steps: int = Field(0, ge=0, description="Env steps trained so far (every segment's).")
    total: int = Field(0, ge=0, description="The unit's budget (train.timesteps).")
    steps_per_s: float = Field(
        0.0, ge=0, description="This segment's steps/s; once finished, every segment's."
    )
    started: float | None = Field(None, description="When this segment started (epoch seconds).")
    finished: bool = Field(False, description="Training ended: `steps` is the final count.")
    checkpoint_bytes: int | None = Field(
        None,
        ge=0,
        description="Bytes on disk of the newest checkpoint (model, statistics, state: an "
        "off-policy algorithm's replay buffer among it); null before the first.",
    )


def write_progress(unit_dir: Path, progress: Progress) -> None:
    """Write progress.json atomically; fsynced only when it is the final count (a tick is
    rewritten within a second)."""
    write_json_atomic(unit_dir / PROGRESS_FILE, progress.as_written(), durable=progress.finished)


def read_progress(unit_dir: Path, *, strict: bool = False) -> Progress | None:
    """A unit's training progress, None when it has none. Damaged (not an object of counts):
    None, or with `strict` a RunFileError naming the file."""
    return read_record(Progress, unit_dir / PROGRESS_FILE, strict=strict)
