"""What a trainer's hooks return, typed (Hydra's `JobReturn` is the model): the train and eval
jobs' figures (which the unit writes into its status.json, and `train` into train.json), a bench
point's measurements (bench.json) and a determinism attempt. Each keeps the keys those files have
always held; `fields()` is what is written.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def fields(self) -> dict[str, Any]:
        """The keys the hook set (defaults it left alone are not written), as JSON values."""
        return self.model_dump(mode="json", exclude_unset=True)


class TrainResult(_Result):
    """The train job's figures (TRAIN_FIELDS, and what a loop adds)."""

    timesteps_done: int = Field(description="Env steps trained in all (resumes included).")
    train_wall_time_s: float | None = Field(description="Seconds of training, every segment.")
    train_steps_per_s: float | None = Field(description="timesteps_done / train_wall_time_s.")
    resumed_from: int | None = Field(None, description="Env steps done before this segment.")
    train_started: float | None = Field(
        None, description="Epoch seconds when this segment started (origin of time-to-reach)."
    )
    resumes: list[int] = Field(
        default_factory=list, description="Every checkpoint step the unit continued from."
    )
    resume: str | None = Field(
        None, description="How exactly this training can resume (`exact`, `approximate: why`)."
    )
    pruned_at: int | None = Field(None, description="A study's pruner stopped it at this step.")
    recovered: str | None = Field(None, description="How a lost train.json was rebuilt.")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TrainResult:
        """train.json's figures (its other keys, the pinned files, are the record's own)."""
        return cls.model_validate({k: v for k, v in record.items() if k in cls.model_fields})


class EvalResult(_Result):
    """The eval job's figures (EVAL_FIELDS): the mean and standard deviation of the returns."""

    eval_mean: float
    eval_std: float


class Spread(_Result):
    """Repeated measurements of one quantity: median, min, max and every run."""

    median: float
    min: float
    max: float
    runs: list[float]


class Rate(_Result):
    """Steps per second of one way of stepping the env, over the bench's repeats."""

    model_config = ConfigDict(extra="allow")  # a loop's own figures (compile_s, wall_s ...)

    steps_per_s: Spread
    steps: int = Field(description="Env steps measured per repeat.")


class TrainRate(Rate):
    """Training steps per second, and the share of it spent stepping envs (None: unknown)."""

    env_fraction: float | None = None


class BenchResult(_Result):
    """One bench point's measurements, as its trainer steps the env (bench.json's point)."""

    envs: int = Field(description="Envs stepped in lockstep.")
    vec_env: str = Field(description="What stepped them (a VecEnv class, a jitted loop).")
    env_only: Rate = Field(description="The env alone, random actions.")
    inference: Rate | None = Field(
        None, description="Env + policy inference, no update; None: off or not separable."
    )
    train: TrainRate | None = Field(None, description="Training; None when bench.train is off.")
    profile: dict[str, Any] | None = Field(None, description="Where a training step's time goes.")
    harness: dict[str, float] | None = Field(
        None, description="What the timing loop itself costs per vector step."
    )


class DeterminismAttempt(_Result):
    """One attempt of `check-determinism`: what two attempts are compared on."""

    steps: list[list[str]] = Field(
        description="Per vector step, digests [observations, actions, rewards]; empty when the "
        "loop cannot be watched step by step."
    )
    params: str = Field(description="Digest of the final parameters.")
    env_steps: int = Field(description="Env steps actually trained.")
    compares: str = Field(description="What is compared, in words, for the user.")
    seconds: float | None = Field(None, description="How long the attempt took.")
