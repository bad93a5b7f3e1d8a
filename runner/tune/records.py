"""What a study leaves in its run directory besides the units: `tune.json` (every trial, its
params, per-seed values, objective and state; rewritten atomically after every trial, read back
on `--resume`) and `best.yaml` (the manifest with the best trial's values set)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import RunFileError
from runner.record.rundir import read_json, write_json_atomic, write_text_atomic

TUNE_FILE = "tune.json"
BEST_FILE = "best.yaml"
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
    state: Literal["running", "complete", "failed"] = "running"
    error: str | None = None
    wall_time_s: float | None = Field(None, description="From its first unit's start to its end.")


class StudyRecord(_Record):
    metric: str
    stat: str
    direction: str
    sampler: str
    sampler_seed: int = Field(description="The sampler's seed in the session that wrote this.")
    optuna_version: str
    storage: str = Field(description="The study's storage, in the run directory.")
    trials: int = Field(description="Trials the study runs in all.")
    parallel: int


class TuneRecord(_Record):
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
    write_json_atomic(run_dir / TUNE_FILE, record.model_dump(mode="json"))


def read_tune(run_dir: Path) -> TuneRecord | None:
    """tune.json, or None when there is none yet; RunFileError (one line) when it is damaged."""
    path = run_dir / TUNE_FILE
    if not path.is_file():
        return None
    try:
        return TuneRecord.model_validate(read_json(path))
    except (ValueError, ValidationError) as exc:
        first = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise RunFileError(f"{path}: damaged ({first})") from None


def write_best(run_dir: Path, data: dict[str, Any], best: TrialRecord, how: str) -> Path:
    """best.yaml: `data` (the manifest as run, its tune: section left out) with the best trial's
    values set at their paths, under a comment that says where they came from."""
    import yaml

    from runner.manifest.matrix import set_path

    data = {k: v for k, v in data.items() if k != "tune"}
    for path, value in best.params.items():
        set_path(data, path, value)
    lines = [
        f"# The best trial of the study in {run_dir} (rlcrate tune): {best.variant},",
        f"# {how} = {best.objective:.6g}, per seed: "
        + ", ".join(f"{s}: {v:.6g}" for s, v in best.per_seed.items() if v is not None)
        + ".",
        "# Its values, set here at their paths:",
        *[f"#   {path}: {value!r}" for path, value in best.params.items()],
        "# The manifest's tune: section is left out: `rlcrate run` this file to run the winner.",
    ]
    text = "\n".join(lines) + "\n" + yaml.safe_dump(data, sort_keys=False)
    write_text_atomic(run_dir / BEST_FILE, text)
    return run_dir / BEST_FILE
