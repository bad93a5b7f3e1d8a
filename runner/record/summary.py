"""A run's summary.json: per variant, per-seed eval, across-seed statistics, timings and the
`expect:` claims; one typed model, written here alone and read through `read_summary`.

It is computed from the unit files (`runner.report.summary`); a file that does not fit this
model is damaged, never half-believed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runner.record.rundir import checked, read_json, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

SUMMARY_FILE = "summary.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MeanStd(_Record):
    mean: float | None = None
    std: float | None = None


class UnitSummary(_Record):
    state: str | None = None
    error: str | None = None
    eval_mean: float | None = None
    eval_std: float | None = None
    wall_time_s: float | None = Field(None, description="This unit's training wall time.")
    unit_wall_time_s: float | None = Field(None, description="Every segment, start-up to eval.")
    train_steps_per_s: float | None = None


class EvalSummary(_Record):
    per_seed_mean: dict[str, float] = Field(default_factory=dict)
    mean: float | None = None
    std: float | None = None
    iqm: float | None = None
    iqm_ci95: list[float | None] | None = None
    n_seeds: int = 0


class Claim(_Record):
    """One `expect:` claim and whether it holds (None: no result yet)."""

    metric: str
    op: str
    value: float
    actual: float | None = None
    met: bool | None = None


class Reach(_Record):
    """Time to a reward level: per seed (None: not reached), their mean, how many reached it."""

    per_seed: dict[str, float | None] = Field(default_factory=dict)
    mean_s: float | None = None
    reached: int = 0


class VariantSummary(_Record):
    overrides: dict[str, Any] = Field(default_factory=dict)
    units: dict[str, UnitSummary] = Field(default_factory=dict)  # seed (as text) -> its unit
    eval: EvalSummary = Field(default_factory=EvalSummary)
    wall_time_s: MeanStd = Field(default_factory=MeanStd)
    train_steps_per_s: MeanStd = Field(default_factory=MeanStd)
    time_to_reward: dict[str, Reach] = Field(default_factory=dict)  # level (as text) -> Reach
    missing: list[int] = Field(default_factory=list)
    expect: list[Claim] = Field(default_factory=list)


class RunSummary(Versioned, _Record):
    """summary.json."""

    FORMAT = Format(SUMMARY_FILE, 1, (stamped,))

    name: str
    run_id: str
    seeds: list[int]
    written: float
    variants: dict[str, VariantSummary]
    expectations_met: bool | None = None
    complete: bool = False


def claims_met(claims: list[Claim]) -> bool | None:
    """False if a claim fails; None if none fails but some have no result yet; else True."""
    met = [c.met for c in claims]
    return False if False in met else (None if None in met else True)


def write_summary_record(run_dir: Path, summary: RunSummary) -> None:
    write_json_atomic(run_dir / SUMMARY_FILE, summary.as_written())


def checked_summary(data: Any, source: str) -> RunSummary | None:
    """summary.json's content (read from `source`) as the model, or None when it does not fit
    it."""
    return checked(RunSummary, data, source)


def read_summary(run_dir: Path) -> RunSummary | None:
    """The run's summary.json, or None when it is missing or damaged."""
    path = run_dir / SUMMARY_FILE
    return checked_summary(read_json(path), str(path))
