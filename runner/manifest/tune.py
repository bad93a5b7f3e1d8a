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
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

MAX_TRIALS = 1000
MAX_GRID = 100_000  # points of a grid sampler's grid (Optuna lists them all, every trial)

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

    @property
    def discrete(self) -> builtins.bool:
        """Choice and int values: a grid can hold them; uniform ranges it cannot."""
        return self.choice is not None or self.int is not None

    def size(self) -> builtins.int:
        """How many values a discrete dimension holds, counted, never listed (an int range of a
        billion values is one number here); 0 for a continuous range."""
        if self.choice is not None:
            return len(self.choice)
        if self.int is not None:
            return (self.int[1] - self.int[0]) // (self.step or 1) + 1
        return 0

    def grid(self) -> list[Any] | None:
        """Every value, for the grid sampler (whose grid `TuneSpec` bounds: MAX_GRID); None for
        a continuous range."""
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


class Pruner(Strict):
    """Optuna's pruner, fed the trial's evaluations during training (`eval.every`): at each, the
    `objective.stat` over the trial's seeds once every seed has reported it."""

    name: Literal["median", "hyperband", "none"] = Field(
        "median",
        description="median (Optuna's MedianPruner: a trial whose value at a step is worse than "
        "the median of the earlier trials' at that step stops), hyperband (HyperbandPruner, "
        "from eval.every steps to train.timesteps), none (every trial trains to its end).",
    )
    startup_trials: int = Field(
        5,
        ge=0,
        le=MAX_TRIALS,
        description="median: trials that run to their end before any is pruned.",
    )
    warmup_steps: int = Field(
        0, ge=0, description="median: training steps before a trial can be pruned."
    )
    reduction_factor: int = Field(3, ge=2, description="hyperband: its reduction factor.")

    @model_validator(mode="before")
    @classmethod
    def _a_name_alone(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


_PATHS: TypeAdapter[dict[str, Dim]] = TypeAdapter(dict[str, Dim], config=Strict.model_config)


class TuneSpec(Strict):
    """An Optuna study (`rlcrate tune`): every trial a variant run on the manifest's seeds."""

    space: dict[str, Dim] | Literal["zoo"] = Field(
        description="Dotted manifest path (as in matrix:; checked with the matrix's paths, "
        "`runner.checks.manifest`) -> {choice: [...]}, {int: [lo, hi], step: n}, "
        "{uniform: [lo, hi]} or {log_uniform: [lo, hi]}; or `zoo`: the search space rl-zoo3 "
        "tunes the algorithm over (its hyperparams_opt sampler, as the installed rl-zoo3 has it).",
    )

    @field_validator("space", mode="wrap")
    @classmethod
    def _paths_or_a_name(cls, value: Any, handler: Any) -> dict[str, Dim] | str:
        # one branch's errors only: a mapping's own, or the name's (not "Input should be 'zoo'"
        # for every mapping with a bad dimension)
        if isinstance(value, str):
            if value != "zoo":
                raise ValueError(f"expected a mapping of dotted paths, or zoo (got {value!r})")
            return value
        space = _PATHS.validate_python(value)
        if not space:
            raise ValueError("expected at least one dotted path, or zoo")
        return space

    def dims(self) -> dict[str, Dim]:
        """The written space's dimensions (none for a named one: its trainer samples it)."""
        return self.space if isinstance(self.space, dict) else {}

    sampler: Literal["tpe", "random", "grid", "qmc", "cmaes"] = Field(
        "tpe",
        description="Optuna's sampler, seeded from the manifest's first seed: tpe, random, grid "
        "(choice and int values only), qmc, cmaes (needs the cmaes package).",
    )
    pruner: Pruner = Field(
        default_factory=lambda: Pruner(name="none"),
        description="median, hyperband or none (the default), or {name, startup_trials, "
        "warmup_steps, reduction_factor}: stops trials whose evaluations during training "
        "(eval.every, which a pruner needs) fall behind.",
    )
    objective: Objective = Field(default_factory=lambda: Objective())
    trials: int = Field(20, ge=1, le=MAX_TRIALS, description="Trials in the study.")
    parallel: int = Field(
        1, ge=1, le=MAX_TRIALS, description="Trials whose units run at once (Optuna ask/tell)."
    )

    @field_validator("objective")
    @classmethod
    def _pruned_on_returns(cls, objective: Objective, info: ValidationInfo) -> Objective:
        pruner = info.data.get("pruner")
        pruned = isinstance(pruner, Pruner) and pruner.name != "none"
        if pruned and objective.metric != "eval.mean_reward":
            from pydantic_core import InitErrorDetails, PydanticCustomError

            error = PydanticCustomError(
                "rlcrate_pruned_metric",
                f"a pruner judges trials on their eval returns during training, so the "
                f"objective's metric must be eval.mean_reward (got {objective.metric}); or set "
                "pruner: none",
            )
            details = InitErrorDetails(type=error, loc=("metric",), input=objective.metric)
            raise ValidationError.from_exception_data("Objective", [details])
        return objective

    @field_validator("sampler")
    @classmethod
    def _grid_is_discrete(cls, sampler: str, info: ValidationInfo) -> str:
        space = info.data.get("space") or {}
        if space == "zoo" and sampler == "grid":
            raise ValueError("sampler grid needs a written space; rl-zoo3's samples ranges")
        ranges = [p for p, d in space.items() if not d.discrete] if space != "zoo" else []
        if sampler == "grid" and ranges:
            raise ValueError(
                f"sampler grid takes choice and int values only; {', '.join(ranges)} "
                "is a continuous range (use another sampler, or a choice)"
            )
        if sampler == "grid" and space != "zoo" and (size := _grid_size(space)) > MAX_GRID:
            raise ValueError(
                f"sampler grid: the space's grid has {size:.3g} points, more than the "
                f"{MAX_GRID:,} Optuna's grid sampler is given at most (it lists every point); "
                "use a larger step, fewer values, or another sampler (tpe samples a range "
                "without listing it)"
            )
        return sampler

    def grid_size(self) -> builtins.int:
        return _grid_size(self.dims())


def _grid_size(space: dict[str, Dim]) -> builtins.int:
    """Points in the grid of every dimension's values (counted, never listed)."""
    size = 1
    for dim in space.values():
        size *= dim.size()
    return size
