"""A rerun's reproduce.json (`rlcrate reproduce`): what was rerun from which archive, the
environment compared, per variant and unit the archived and rerun results, the `expect:` claims
not met, and the verdict with its one line. One typed model, written here alone, last and
atomically (`write_reproduce`), and read through `read_reproduce`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

REPRODUCE_FILE = "reproduce.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EnvironmentRow(_Record):
    """One thing of the environment, as archived and as rerun."""

    what: str
    archived: str
    here: str


class UnitComparison(_Record):
    key: str
    seed: int
    archived: float | None = Field(description="The archived eval mean; null: none.")
    rerun: float | None = Field(description="The rerun's; null: none.")
    identical: bool = Field(description="Every eval return equal, exactly.")


class VariantComparison(_Record):
    name: str
    level: str = Field(description="Its determinism level: bitwise or statistical.")
    why: str
    units: list[UnitComparison] = Field(default_factory=list)
    verdict: str
    p_value: float | None = None
    note: str = ""


class ReproduceRecord(Versioned, _Record):
    """reproduce.json. A rerun that could not run to its end has a null verdict and no
    comparison."""

    FORMAT = Format(REPRODUCE_FILE, 1, (stamped,))

    archive: str = Field(description="The archive file (absolute).")
    archived_run: str = Field(description="Its run directory's name.")
    seeds: list[int]
    trials: list[str] | None = Field(None, description="A study's: the trials rerun.")
    environment: list[EnvironmentRow] = Field(default_factory=list)
    same_environment: bool | None = None
    variants: list[VariantComparison] = Field(default_factory=list)
    expect_not_met: list[str] = Field(default_factory=list)
    verdict: str | None = Field(
        description="identical, within tolerance or different; null: no verdict."
    )
    holds: bool
    line: str = Field(description="The verdict's one line, as printed.")


def write_reproduce(run_dir: Path, record: ReproduceRecord) -> None:
    write_json_atomic(run_dir / REPRODUCE_FILE, record.as_written())


def read_reproduce(run_dir: Path) -> ReproduceRecord | None:
    """The rerun's reproduce.json; None when it is missing or damaged."""
    return read_record(ReproduceRecord, run_dir / REPRODUCE_FILE)
