"""A unit's eval.json: the evaluation's episodes and what they add up to, one typed model,
written here alone and read through `read_eval` / `checked_eval` everywhere; `EvalResult`, what
a trainer's `evaluate` returns (the eval job's fields of the unit's status.json).

A record is whole only when its mean, std and count agree with its own episodes: a mean is
never believed over the episodes it summarises (an altered archive, a damaged file).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runner.record.result import Result
from runner.record.rundir import checked, read_json, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped_keeping

EVAL_FILE = "eval.json"


class Episode(BaseModel):
    model_config = ConfigDict(populate_by_name=True, strict=True, allow_inf_nan=True)

    ret: float = Field(alias="return", description="The episode's return (summed rewards).")
    length: int = Field(ge=0, description="Its length in agent steps.")


class EpisodeLimit(BaseModel):
    """The bound every evaluation episode ran under (none runs forever)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    steps: int = Field(gt=0, description="An episode ends (truncated) at this many steps at most.")
    source: str = Field(
        description="What set it: the env's own time limit, eval.max_episode_steps, or rlcrate's "
        "default for an env without a time limit."
    )
    reached: int = Field(ge=0, description="Episodes that ran to the bound (cut there).")


class EvalResult(Result):
    """The eval job's figures: what `Trainer.evaluate` returns, and the unit's status.json keeps."""

    eval_mean: float | None = Field(None, description="Its episodes' mean return.")
    eval_std: float | None = Field(None, description="Their standard deviation.")


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1: the same fields; any other an older rlcrate wrote is kept under `legacy`."""
    return stamped_keeping(data, set(EvalRecord.model_fields) - {"legacy"})


class EvalRecord(Versioned):
    """eval.json."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    FORMAT = Format(EVAL_FILE, 1, (from_unversioned,))

    episodes: list[Episode] = Field(min_length=1)
    mean: float
    std: float
    deterministic: bool | None = None
    n_episodes: int | None = None
    seed: int | None = Field(None, description="The eval env's seed.")
    episode_limit: EpisodeLimit | None = Field(
        None, description="The bound on each episode's steps (older records: none recorded)."
    )
    legacy: dict[str, Any] | None = Field(
        None, description="Fields an older format held that this one does not name, as written."
    )

    @model_validator(mode="after")
    def _agrees_with_its_episodes(self) -> EvalRecord:
        mean, std = _mean_std(self.returns())
        if not (_same(self.mean, mean) and _same(self.std, std)):
            raise ValueError("its mean or std disagrees with its episodes")
        if self.n_episodes is not None and self.n_episodes != len(self.episodes):
            raise ValueError("its episode count disagrees with its episodes")
        return self

    def returns(self) -> list[float]:
        return [e.ret for e in self.episodes]

    def lengths(self) -> list[int]:
        return [e.length for e in self.episodes]


def _mean_std(values: list[float]) -> tuple[float, float]:
    import numpy as np

    return float(np.mean(values)), float(np.std(values))


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))


def checked_eval(data: Any, source: str) -> EvalRecord | None:
    """An eval.json's content (read from `source`) as a record if it is whole (numeric episodes
    whose mean, std and count are the ones recorded); None when it is not."""
    return checked(EvalRecord, data, source)


def read_eval(path: Path) -> EvalRecord | None:
    """A unit's eval.json, checked (`checked_eval`); None when missing or damaged."""
    return checked_eval(read_json(path), str(path))


def write_eval_record(
    unit_dir: Path,
    returns: Any,
    lengths: Any,
    *,
    deterministic: bool,
    seed: int,
    limit: tuple[int, str] | None = None,
) -> EvalRecord:
    """Write the unit's eval.json (atomically) from its episodes; `limit`: (steps, what set it),
    the bound its episodes ran under."""
    episodes = [Episode(ret=float(r), length=int(n)) for r, n in zip(returns, lengths, strict=True)]
    mean, std = _mean_std([e.ret for e in episodes])
    bound = None
    if limit is not None:
        reached = sum(e.length >= limit[0] for e in episodes)
        bound = EpisodeLimit(steps=limit[0], source=limit[1], reached=reached)
    record = EvalRecord(
        episodes=episodes,
        mean=mean,
        std=std,
        deterministic=deterministic,
        n_episodes=len(episodes),
        seed=seed,
        episode_limit=bound,
    )
    write_json_atomic(unit_dir / EVAL_FILE, record.as_written())
    return record
