"""A unit's status.json: its state and what its job recorded, one typed model, read and written
here alone (tests/test_structure.py fails on another writer).

The unit writes its own record (state, times, its trainer's fields, its error); the runner and
the executors add what only they know (a unit that died without a word, a Slurm job id). Fields
this model does not name (a plugin's own) are kept as they were written.
"""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import RunFileError
from runner.record.process import ProcessRef
from runner.record.rundir import checked, read_json, write_json_atomic

STATES = ("pending", "running", "done", "failed", "interrupted")
TERMINAL = ("done", "failed")  # a unit in these states ran to its end (interrupted did not)
STATUS_FILE = "status.json"
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)  # a full disk, or the user's quota


class UnitStatus(BaseModel):
    """status.json. Every field but `state` may be absent (a unit not yet started has none)."""

    model_config = ConfigDict(extra="allow")  # a trainer's or an executor's own fields

    state: Literal["pending", "running", "done", "failed", "interrupted"] = "pending"
    updated: float | None = Field(None, description="When this record was last written.")
    variant: str | None = None
    seed: int | None = None
    error: str | None = Field(None, description="Why it failed or stopped, in one line.")
    started: float | None = Field(None, description="When its latest segment started.")
    finished: float | None = None
    wall_time_s: float | None = Field(None, description="Every segment's wall time together.")
    jobs: list[str] | None = None
    seeds: dict[str, int] | None = Field(None, description="The seeds derived from its seed.")
    python: dict[str, Any] | None = Field(None, description="The interpreter it ran in.")
    process: ProcessRef | None = Field(
        None, description="The unit's process (its latest segment's): `status` checks it runs."
    )
    # the trainer's (runner.trainers.base.TRAIN_FIELDS, EVAL_FIELDS)
    timesteps_done: int | None = None
    train_wall_time_s: float | None = None
    train_started: float | None = None
    train_steps_per_s: float | None = None
    resumed_from: int | None = None
    resumes: list[int] = Field(default_factory=list)
    pruned_at: int | None = Field(
        None, description="A study's pruner stopped its training at this step (rlcrate tune)."
    )
    eval_mean: float | None = None
    eval_std: float | None = None
    recovered: str | None = Field(None, description="How a lost record was rebuilt.")

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL


def _record(unit_dir: Path) -> dict[str, Any]:
    old = read_json(unit_dir / STATUS_FILE)
    return old if isinstance(old, dict) else {}  # a damaged record is replaced, not merged


def _merged(unit_dir: Path, state: str, fields: dict[str, Any]) -> dict[str, Any]:
    assert state in STATES, state
    record = {**_record(unit_dir), **fields, "state": state, "updated": time.time()}
    UnitStatus.model_validate(record)  # what is written is what every reader can read
    return record


def write_status(unit_dir: Path, state: str, **fields: Any) -> None:
    """Set the unit's state and `fields` over its record (atomically)."""
    write_json_atomic(unit_dir / STATUS_FILE, _merged(unit_dir, state, fields))


def write_status_anyway(unit_dir: Path, state: str, **fields: Any) -> None:
    """write_status; on a full disk, overwrite status.json in place instead (truncating it
    frees the room its new text needs), so the reason is recorded even then."""
    try:
        write_status(unit_dir, state, **fields)
    except OSError as exc:
        if exc.errno not in NO_SPACE:
            raise
        record = _merged(unit_dir, state, fields)
        with open(unit_dir / STATUS_FILE, "w", encoding="utf-8") as f:
            f.write(json.dumps(record, default=str))


def recorded_status(unit_dir: Path) -> UnitStatus | None:
    """The unit's record, or None when it has none or it is damaged (not a JSON object of
    these fields)."""
    return checked(UnitStatus, read_json(unit_dir / STATUS_FILE))


def read_status(unit_dir: Path, *, strict: bool = False) -> UnitStatus:
    """A unit's record; `pending` when it has none. A damaged record reads as none (the unit
    runs again), or with `strict` (commands that only report) as a RunFileError naming the
    file."""
    found = recorded_status(unit_dir)
    if found is not None:
        return found
    path = unit_dir / STATUS_FILE
    if strict and path.exists():
        data = read_json(path)
        found_what = "no valid JSON" if data is None else f"a JSON {type(data).__name__}"
        if isinstance(data, dict):
            try:
                UnitStatus.model_validate(data)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                found_what = f"{where}: {err['msg']}"
        raise RunFileError(
            f"{path}: damaged (expected a JSON object of a unit's status, {found_what})"
        )
    return UnitStatus()
