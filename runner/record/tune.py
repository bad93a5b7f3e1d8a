"""A study's `tune.json` (`rlcrate tune`): every trial, its params, per-seed values, objective
and state; rewritten atomically after every trial, read back on `--resume` and by the report.
One typed model, written here alone and read through `read_tune`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from runner.errors import RunFileError
from runner.record.rundir import checked, problem, read_json, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

TUNE_FILE = "tune.json"
STUDY_FILE = "study.journal"  # Optuna's JournalStorage, one line per change


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrialRecord(_Record):
    number: int
    variant: str = Field(description="Its units: units/<variant>/seed-<n>/.")
    params: dict[str, Any] = Field(description="Dotted manifest path -> the value it ran with.")
    per_seed: dict[str, float | None] = Field(
        default_factory=dict, description="Seed (as text) -> the objective's metric there."
    )
    objective: float | None = None
    state: Literal["running", "complete", "pruned", "failed"] = "running"
    error: str | None = None
    wall_time_s: float | None = Field(None, description="From its first unit's start to its end.")
    pruned_at: int | None = Field(
        None, description="Pruned: the step whose evaluation the pruner stopped it on."
    )
    intermediate: dict[str, float] = Field(
        default_factory=dict,
        description="Step (as text) -> the objective's stat over the seeds' evaluations during "
        "training there (eval.every), as reported to the pruner.",
    )
    bookkeeping_s: float | None = Field(
        None,
        description="The study's own time for it outside its units: asking, resolved.yaml, "
        "judging, telling, tune.json.",
    )


class StudyRecord(_Record):
    metric: str
    stat: str
    direction: str
    sampler: str
    sampler_seed: int = Field(description="The sampler's seed in the session that wrote this.")
    pruner: str = "none"
    replays: str = Field("", description="Whether the study replays exactly, and why.")
    optuna_version: str
    storage: str = Field(description="The study's storage, in the run directory.")
    trials: int = Field(description="Trials the study runs in all.")
    parallel: int


class TuneRecord(Versioned, _Record):
    """tune.json."""

    FORMAT = Format(TUNE_FILE, 1, (stamped,))

    name: str
    run_id: str
    seeds: list[int]
    study: StudyRecord
    trials: list[TrialRecord] = Field(default_factory=list)
    best: int | None = Field(None, description="The best complete trial's number.")
    written: float = Field(default_factory=time.time)

    def trial(self, number: int) -> TrialRecord | None:
        return next((t for t in self.trials if t.number == number), None)


def write_tune(run_dir: Path, record: TuneRecord) -> None:
    record.written = time.time()
    record.trials.sort(key=lambda t: t.number)
    write_json_atomic(run_dir / TUNE_FILE, record.as_written())


def checked_tune(data: Any, source: str) -> TuneRecord | None:
    """tune.json's content (read from `source`) as the model, or None when it does not fit it."""
    return checked(TuneRecord, data, source)


def read_tune(run_dir: Path) -> TuneRecord | None:
    """tune.json, or None when there is none yet; RunFileError (one line) when it is damaged."""
    path = run_dir / TUNE_FILE
    if not path.is_file():
        return None
    data = read_json(path)
    found = checked_tune(data, str(path))
    if found is None:
        raise RunFileError(f"{path}: damaged ({problem(TuneRecord, data, str(path))})")
    return found
