"""The manifest's `tune:` section: an Optuna study over dotted manifest paths (`rlcrate tune`).

Only the schema lives here (checked with the rest of the manifest, every problem at its line);
running a study is `runner.tune`, the one place Optuna is imported.
"""

from __future__ import annotations

import builtins
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

MAX_TRIALS = 1000

# The per-seed numbers summary.json holds for each unit that a study can optimise (its
# `units.<seed>` fields): the across-seed statistics (`stat`) are the study's own.
OBJECTIVE_METRICS = {
    "eval.mean_reward": "the unit's mean eval return (summary.json units.<seed>.eval_mean)",
    "train.steps_per_s": "the unit's training steps per second (units.<seed>.train_steps_per_s)",
    "train.wall_time_s": "the unit's training wall time (units.<seed>.wall_time_s)",
}
Metric = Literal["eval.mean_reward", "train.steps_per_s", "train.wall_time_s"]
KINDS = ("choice", "int", "uniform", "log_uniform")


class Strict(BaseModel):
    """As the schema's own (`schema.Strict`, which imports this module): unknown keys refused,
    one type per value, no NaN or infinity."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False
    )


class Dim(Strict):
    """One searched value: exactly one of choice, int (with step), uniform, log_uniform."""

    choice: list[Any] | None = Field(None, description="Values to choose from.")
    int: list[builtins.int] | None = Field(None, description="[low, high], both included.")
    step: builtins.int | None = Field(None, ge=1, description="With int: the step between values.")
    uniform: list[float] | None = Field(None, description="[low, high], drawn uniformly.")
    log_uniform: list[float] | None = Field(
        None, description="[low, high], both > 0, drawn uniformly in log space."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> Dim:
        given = [k for k in KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            got = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(f"expected exactly one of {', '.join(KINDS)} ({got})")
        kind = given[0]
        if self.step is not None and kind != "int":
            raise ValueError("step goes with int only")
        if kind == "choice":
            if not self.choice:
                raise ValueError("choice: expected at least one value, got an empty list")
            return self
        bounds = getattr(self, kind)
        if len(bounds) != 2:
            raise ValueError(f"{kind}: expected [low, high], got {len(bounds)} value(s)")
        low, high = bounds
        if low > high:
            raise ValueError(f"{kind}: low ({low}) is greater than high ({high})")
        if kind == "log_uniform" and low <= 0:
            raise ValueError(f"log_uniform: both bounds must be > 0 (got low {low})")
        return self

    @model_serializer(mode="wrap")
    def _given_only(self, handler: Any) -> dict[str, Any]:
        # resolved.yaml writes the dimension as it is written: its one kind (and step)
        return {k: v for k, v in handler(self).items() if v is not None}

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)

    def grid(self) -> list[Any] | None:
        """Every value, for the grid sampler; None for a continuous range."""
        if self.choice is not None:
            return list(self.choice)
        if self.int is not None:
            return list(range(self.int[0], self.int[1] + 1, self.step or 1))
        return None


class Objective(Strict):
    metric: Metric = Field(
        "eval.mean_reward",
        description="The per-seed number each trial is judged on: "
        + "; ".join(f"{k}: {v}" for k, v in OBJECTIVE_METRICS.items())
        + ".",
    )
    stat: Literal["iqm", "mean", "min"] = Field(
        "iqm",
        description="How a trial's per-seed values become its objective: iqm (interquartile "
        "mean, scipy.stats.trim_mean(x, 0.25)), mean, or min (the worst seed).",
    )
    direction: Literal["maximize", "minimize"] = Field("maximize", description="Of the objective.")


class TuneSpec(Strict):
    """An Optuna study (`rlcrate tune`): every trial a variant run on the manifest's seeds."""

    space: dict[str, Dim] = Field(
        min_length=1,
        description="Dotted manifest path (as in matrix:; checked with the matrix's paths, "
        "`runner.checks.manifest`) -> {choice: [...]}, {int: [lo, hi], step: n}, "
        "{uniform: [lo, hi]} or {log_uniform: [lo, hi]}.",
    )
    sampler: Literal["tpe", "random", "grid", "qmc", "cmaes"] = Field(
        "tpe",
        description="Optuna's sampler, seeded from the manifest's first seed: tpe, random, grid "
        "(choice and int values only), qmc, cmaes (needs the cmaes package).",
    )
    pruner: str = Field("none", description="none (pruning is not supported yet).")
    objective: Objective = Field(default_factory=lambda: Objective())
    trials: int = Field(20, ge=1, le=MAX_TRIALS, description="Trials in the study.")
    parallel: int = Field(
        1, ge=1, le=MAX_TRIALS, description="Trials whose units run at once (Optuna ask/tell)."
    )

    @field_validator("pruner")
    @classmethod
    def _pruner(cls, pruner: str) -> str:
        if pruner in ("median", "hyperband"):
            raise ValueError(f"pruner {pruner} is not yet supported; use none")
        if pruner != "none":
            raise ValueError(f"expected none (got {pruner!r})")
        return pruner

    @field_validator("sampler")
    @classmethod
    def _grid_is_discrete(cls, sampler: str, info: ValidationInfo) -> str:
        space = info.data.get("space") or {}
        ranges = [p for p, d in space.items() if d.grid() is None]
        if sampler == "grid" and ranges:
            raise ValueError(
                f"sampler grid takes choice and int values only; {', '.join(ranges)} "
                "is a continuous range (use another sampler, or a choice)"
            )
        return sampler

    def grid_size(self) -> builtins.int:
        size = 1
        for dim in self.space.values():
            size *= len(dim.grid() or [])
        return size
