"""A unit's train.json: the finished training's figures and the SHA-256 of its final model's
files, one typed model, written here alone (`write_train`, after model.zip: from then on,
resuming the unit only evaluates) and read through `read_train`.

`TrainResult` is what a trainer's `train` returns, the train job's fields of the unit's
status.json; train.json is that with `files` (`runner.trainers.resume` writes it for the loops
whose resume it runs).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from runner.record.result import Result
from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

TRAIN_FILE = "train.json"


class TrainResult(Result):
    """The train job's figures: what `Trainer.train` returns, and the unit's status.json keeps."""

    NOT_RESULT = {"format", "written_by", "files"}  # train.json's fields that are not the result's

    timesteps_done: int | None = Field(
        None, ge=0, description="Env steps trained in all (every segment's)."
    )
    train_wall_time_s: float | None = Field(
        None, description="Training seconds, every segment's that led to the final model."
    )
    train_started: float | None = Field(
        None, description="When the last segment started (epoch seconds; time-to-reach's origin)."
    )
    train_steps_per_s: float | None = Field(None, description="timesteps_done / wall time.")
    resumed_from: int | None = Field(
        None, description="Env steps done before the last segment; null: none."
    )
    resumes: list[int] = Field(
        default_factory=list, description="Every checkpoint step it was continued from."
    )
    resume: str | None = Field(
        None, description="How a stop would resume: `exact`, or `approximate: why`."
    )
    pruned_at: int | None = Field(
        None, description="A study's pruner stopped its training at this step (rlcrate tune)."
    )
    recovered: str | None = Field(None, description="How a lost record was rebuilt.")


class TrainRecord(Versioned, TrainResult):
    """train.json."""

    FORMAT = Format(TRAIN_FILE, 1, (stamped,))

    timesteps_done: int = Field(ge=0, description="Env steps the final model trained.")
    files: dict[str, str] = Field(
        default_factory=dict,
        description="File name (beside it) -> SHA-256 of the final model's files, checked "
        "before anything reads them; older records: none.",
    )

    def result(self) -> TrainResult:
        """The training's figures, as its trainer's `train` returned them (the record's own
        fields, format and files, left out)."""
        return TrainResult.model_validate(self.fields())


def write_train(unit_dir: Path, record: TrainRecord) -> None:
    write_json_atomic(unit_dir / TRAIN_FILE, record.as_written())


def read_train(unit_dir: Path) -> TrainRecord | None:
    """The unit's train.json, None when it is missing or damaged."""
    return read_record(TrainRecord, unit_dir / TRAIN_FILE)
