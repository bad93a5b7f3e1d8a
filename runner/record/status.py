"""A unit's status.json: its state and what its jobs recorded, one typed model, read and written
here alone (tests/project/test_structure.py fails on another writer).

The unit writes its own record (state, times, its trainer's `TrainResult` and `EvalResult`, its
error); the runner and the executors add what only they know (a unit that died without a word,
the Ray node it ran on, a Slurm job id). Every field is named here, and `write_status` takes
them as typed keywords (`StatusFields`): a field this model lacks is an error where it is
written, not a key a reader stumbles on.
"""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from runner.record.eval import EvalResult
from runner.record.process import ProcessRef
from runner.record.rundir import checked, read_json, read_record, write_json_atomic
from runner.record.train import TrainResult
from runner.record.versioned import Format, Versioned, stamped_keeping

if TYPE_CHECKING:
    from typing_extensions import Unpack

STATES = ("pending", "running", "done", "failed", "interrupted")
State = Literal["pending", "running", "done", "failed", "interrupted"]
TERMINAL = ("done", "failed")  # a unit in these states ran to its end (interrupted did not)
STATUS_FILE = "status.json"
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)  # a full disk, or the user's quota


class Interpreter(BaseModel):
    """The Python a unit ran in."""

    model_config = ConfigDict(extra="forbid")

    executable: str
    version: str


class ExecutorFields(BaseModel):
    """What an executor records of a unit beside the unit's own record."""

    model_config = ConfigDict(extra="forbid")

    node: str | None = Field(None, description="ray: the node the unit ran on.")
    attempts: int | None = Field(None, ge=0, description="ray: the tasks it took.")
    slurm_job: str | None = Field(None, description="slurm: the unit's batch job id.")


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1: a record from before status.json was versioned. Its fields are format 1's,
    but for what an older trainer or executor added under names this model does not have: those
    are kept as they were, under `legacy`."""
    return stamped_keeping(data, set(UnitStatus.model_fields) - {"legacy"})


class UnitStatus(Versioned, ExecutorFields, EvalResult, TrainResult):
    """status.json. Every field but `state` may be absent (a unit not yet started has none)."""

    model_config = ConfigDict(extra="forbid")

    state: State = "pending"
    updated: float | None = Field(None, description="When this record was last written.")
    variant: str | None = None
    seed: int | None = None
    error: str | None = Field(None, description="Why it failed or stopped, in one line.")
    started: float | None = Field(None, description="When its latest segment started.")
    finished: float | None = None
    wall_time_s: float | None = Field(None, description="Every segment's wall time together.")
    jobs: list[str] | None = None
    seeds: dict[str, int] | None = Field(None, description="The seeds derived from its seed.")
    python: Interpreter | None = Field(None, description="The interpreter it ran in.")
    process: ProcessRef | None = Field(
        None, description="The unit's process (its latest segment's): `status` checks it runs."
    )
    legacy: dict[str, Any] | None = Field(
        None,
        description="Fields a record of an older format held that this one does not name, kept "
        "as they were written (`from_unversioned`).",
    )

    FORMAT = Format(STATUS_FILE, 1, (from_unversioned,))

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL

    def as_written(self) -> dict[str, Any]:
        """Every field, its own first, then the jobs' and the executor's (`legacy` only when an
        older record had some)."""
        data = super().as_written()
        if data.get("legacy") is None:
            data.pop("legacy", None)
        first = ["format", "written_by", *type(self).__annotations__]
        return {**{k: data[k] for k in first if k in data}, **data}


class StatusFields(TypedDict, total=False):
    """What `write_status` may set: UnitStatus's fields but its state, stamp and legacy ones
    (tests/record/test_record_formats.py holds the two together)."""

    variant: str
    seed: int
    error: str | None
    started: float | None
    finished: float | None
    wall_time_s: float | None
    jobs: list[str]
    seeds: dict[str, int]
    python: Interpreter
    process: ProcessRef
    # the trainer's (TrainResult)
    timesteps_done: int | None
    train_wall_time_s: float | None
    train_started: float | None
    train_steps_per_s: float | None
    resumed_from: int | None
    resumes: list[int]
    resume: str | None
    pruned_at: int | None
    recovered: str | None
    # the evaluation's (EvalResult)
    eval_mean: float | None
    eval_std: float | None
    # the executor's (ExecutorFields)
    node: str | None
    attempts: int | None
    slurm_job: str | None


def together(*parts: StatusFields) -> StatusFields:
    """The fields of `parts`, a later one's over an earlier one's."""
    out: StatusFields = {}
    for part in parts:
        out.update(part)
    return out


NOT_WRITTEN = {"format", "written_by", "state", "updated", "legacy"}  # set here, not by callers


def _current(unit_dir: Path) -> dict[str, Any]:
    """The record as it stands, to write over: a damaged one is replaced, not merged; a newer
    format's is never overwritten (NewerFormat)."""
    path = unit_dir / STATUS_FILE
    old = checked(UnitStatus, read_json(path), str(path))
    return old.model_dump(exclude={"format", "written_by"}) if old is not None else {}


def _merged(unit_dir: Path, state: State, fields: StatusFields) -> UnitStatus:
    record = {**_current(unit_dir), **fields, "state": state, "updated": time.time()}
    return UnitStatus.model_validate(record)  # what is written is what every reader can read


def write_status(unit_dir: Path, state: State, **fields: Unpack[StatusFields]) -> None:
    """Set the unit's state and `fields` over its record (atomically)."""
    write_json_atomic(unit_dir / STATUS_FILE, _merged(unit_dir, state, fields).as_written())


def write_status_anyway(unit_dir: Path, state: State, **fields: Unpack[StatusFields]) -> None:
    """write_status; on a full disk, overwrite status.json in place instead (truncating it
    frees the room its new text needs), so the reason is recorded even then."""
    try:
        write_status(unit_dir, state, **fields)
    except OSError as exc:
        if exc.errno not in NO_SPACE:
            raise
        record = _merged(unit_dir, state, fields)
        with open(unit_dir / STATUS_FILE, "w", encoding="utf-8") as f:
            f.write(json.dumps(record.as_written()))


def recorded_status(unit_dir: Path) -> UnitStatus | None:
    """The unit's record, or None when it has none or it is damaged (not a JSON object of
    these fields)."""
    path = unit_dir / STATUS_FILE
    return checked(UnitStatus, read_json(path), str(path))


def read_status(unit_dir: Path, *, strict: bool = False) -> UnitStatus:
    """A unit's record; `pending` when it has none. A damaged record reads as none (the unit
    runs again), or with `strict` (commands that only report) as a RunFileError naming the
    file."""
    found = read_record(UnitStatus, unit_dir / STATUS_FILE, strict=strict)
    return found if found is not None else UnitStatus()
