"""A unit's evaluations during training (`eval.every`) and a study's request to stop it early.

`evals.json` lists each evaluation the unit ran while training: the step it is due at (a
multiple of `eval.every`, the same for every seed, so a study can line its seeds up) and the
episodes' returns. The unit rewrites it (atomically) after each one. `prune.json` is written by
`rlcrate tune` into a unit whose trial its pruner stopped; the unit reads it while it trains,
ends its training there and records `pruned_at` (the steps it trained) in its status.json.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

EVALS_FILE = "evals.json"
PRUNE_FILE = "prune.json"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=True)


class Evaluation(Strict):
    step: int = Field(ge=0, description="The step it is due at: a multiple of eval.every.")
    returns: list[float] = Field(min_length=1, description="Its episodes' returns.")

    @property
    def mean(self) -> float:
        return sum(self.returns) / len(self.returns)


class Evals(Versioned, Strict):
    """evals.json."""

    FORMAT = Format(EVALS_FILE, 1, (stamped,))

    evaluations: list[Evaluation] = Field(default_factory=list)


class PruneRequest(Versioned, Strict):
    """prune.json."""

    FORMAT = Format(PRUNE_FILE, 1, (stamped,))

    step: int = Field(ge=0, description="The step whose evaluation the pruner judged.")
    reason: str


def read_evals(unit_dir: Path) -> list[Evaluation]:
    """The unit's evaluations so far, oldest first (none for an unreadable file: the study
    waits for the next rewrite)."""
    record = read_evals_record(unit_dir)
    return record.evaluations if record is not None else []


def read_evals_record(unit_dir: Path) -> Evals | None:
    """The unit's evals.json; None when it has none or it is damaged."""
    return read_record(Evals, unit_dir / EVALS_FILE)


def add_evaluation(unit_dir: Path, step: int, returns: list[float]) -> None:
    """Record one more evaluation (one at a step already recorded, as after a resume, replaces
    it)."""
    kept = [e for e in read_evals(unit_dir) if e.step != step]
    evals = Evals(evaluations=[*kept, Evaluation(step=step, returns=returns)])
    write_json_atomic(unit_dir / EVALS_FILE, evals.as_written())


def request_prune(unit_dir: Path, step: int, reason: str) -> None:
    write_json_atomic(unit_dir / PRUNE_FILE, PruneRequest(step=step, reason=reason).as_written())


def prune_requested(unit_dir: Path) -> PruneRequest | None:
    return read_record(PruneRequest, unit_dir / PRUNE_FILE)
