"""A checkpoint's record, `checkpoints/step-N.json` beside `step-N.zip`: the step it holds, the
training time spent to reach it (so wall time and steps/s add up across segments) and the SHA-256
of its files, checked before any library opens them. One typed model, written here alone
(`write_checkpoint_record`, after the checkpoint's files) and read through `read_checkpoint_record`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field

from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped


class CheckpointRecord(Versioned):
    """step-N.json."""

    model_config = ConfigDict(extra="forbid")
    FORMAT = Format("step-N.json", 1, (stamped,))

    timesteps: int = Field(ge=0, description="The env steps the checkpoint holds.")
    train_wall_time_s: float = Field(ge=0, description="Training seconds spent to reach it.")
    files: dict[str, str] = Field(
        default_factory=dict,
        description="File name (in checkpoints/) -> SHA-256 of the checkpoint's files; none: "
        "nothing to check (a loop that pins none, an older run).",
    )


def record_path(checkpoint: Path) -> Path:
    """checkpoints/step-N.zip -> checkpoints/step-N.json"""
    return checkpoint.with_suffix(".json")


def write_checkpoint_record(checkpoint: Path, record: CheckpointRecord) -> None:
    write_json_atomic(record_path(checkpoint), record.as_written())


def read_checkpoint_record(checkpoint: Path) -> CheckpointRecord | None:
    """The record beside `checkpoint`; None when it is missing or damaged."""
    return read_record(CheckpointRecord, record_path(checkpoint))
