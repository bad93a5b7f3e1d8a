"""A run's bench.json (the bench job): per sweep point, env-only, env + inference and training
steps/s (median, min, max of the repeats), the point's profile and cold start, the speed-ups
against the series' first point, where the gain flattens, and the findings in words. One typed
model, written here alone (`write_bench`) and read through `read_bench` (the report).

`BenchResult` is what a trainer's `bench` returns for one point; the bench job adds what it knows
of the point (`BenchPoint`) and analyses the points together (`runner.run.bench.analysis`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runner.record.result import Result
from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

BENCH_FILE = "bench.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Spread(_Record):
    """Repeated measurements of one rate: their median, min, max and every one."""

    median: float
    min: float
    max: float
    runs: list[float] = Field(default_factory=list)


class Rate(_Record):
    """One measured rate of a point."""

    steps_per_s: Spread
    steps: int = Field(ge=0, description="Env steps per repeat.")
    env_fraction: float | None = Field(
        None, description="train: the share of training time spent stepping envs; null: unknown."
    )
    compile_s: float | None = Field(None, description="brax_ppo: seconds compiling first.")
    warmup_epochs_steps_per_s: list[float] | None = Field(
        None, description="brax_ppo: the untimed warm-up epochs' steps/s."
    )
    wall_s: float | None = Field(None, description="brax_ppo: the whole measurement's seconds.")


class Profile(_Record):
    """Where a training step goes (`bench.profile`, a trainer that can split a step)."""

    seconds_per_step: dict[str, float] = Field(description="Part -> seconds per env step.")
    share: dict[str, float] = Field(description="Part -> its share of a training step.")
    steps: int
    steps_per_s: float
    overhead: float = Field(description="1 - profiled / plain steps/s (median of the pairs).")
    overhead_ratios: list[float]
    overhead_cpu: float = Field(description="Profiled / plain CPU time per step - 1 (median).")
    overhead_cpu_ratios: list[float]
    overhead_bound: float = Field(description="The timed calls' own cost, a share of a step.")
    timed_calls_per_step: float
    engine_reported: bool = Field(description="Godot: the game reported its own tick times.")
    env_stall: str | None = Field(
        None,
        description="The env's own finding about its replies (a Godot game's socket waiting out "
        "Nagle's algorithm); null: none.",
    )
    device: str


class Harness(_Record):
    """What the harness itself costs per vector step (the timed loop, the step timer)."""

    loop_s_per_vector_step: float
    timer_s_per_vector_step: float


class BenchResult(Result):
    """What a trainer's `bench` returns for one point (see `Trainer.bench`)."""

    envs: int | None = Field(None, description="Envs stepped together.")
    vec_env: str | None = Field(None, description="What stepped them.")
    env_only: Rate | None = Field(None, description="The env alone, random actions.")
    inference: Rate | None = Field(
        None, description="Env + policy inference (no update); null: not measured apart."
    )
    train: Rate | None = Field(None, description="Training; null: bench.train is off.")
    profile: Profile | None = None
    harness: Harness | None = Field(None, description="Taken out of the point by the bench job.")


class ColdStart(_Record):
    seconds: float = Field(description="From a fresh process to the end of its first step.")
    processes: int


class BenchPoint(BenchResult):
    """One sweep point of bench.json."""

    label: str
    variant: str
    x: Any = Field(description="The swept value (a number, or what a categorical sweep sets).")
    overrides: dict[str, Any]
    error: str | None = Field(None, description="Why measuring it failed; null: it did not.")
    # null in a point that failed before its env was made (an older rlcrate's) or, for
    # `trainer` and `python`, in one from before they were recorded
    backend: str | None = None
    env_id: str | None = None
    workers: int | None = None
    mode: str | None = None
    algo: str | None = None
    trainer: str | None = None
    python: str | None = Field(None, description="The interpreter it was measured in.")
    cold_start: ColdStart | None = None
    speedup: dict[str, float] = Field(
        default_factory=dict, description="Rate -> ×, against its series' first point."
    )
    efficiency: dict[str, float] = Field(
        default_factory=dict, description="Rate -> speed-up / the swept value's ratio."
    )


class Axis(_Record):
    label: str
    numeric: bool
    log2: bool


class Settings(_Record):
    steps: int
    warmup: int
    repeats: int
    train: bool
    flatten_efficiency: float


class Host(_Record):
    cpu_model: str | None = None
    cpu_count: int | None = None
    cpu_usable: int | None = None
    platform: str | None = None
    python: str | None = None
    load_avg_before: list[float] = Field(default_factory=list)
    load_avg_after: list[float] = Field(default_factory=list)


class Flatten(_Record):
    """Where a series' gain flattens: the first value whose efficiency is below `threshold`."""

    x: Any = None
    efficiency: float | None = None
    threshold: float


class Overhead(Harness):
    max_fraction: dict[str, float] = Field(
        description="Rate -> the harness's largest cost, as a share of a measured step."
    )


class BenchRecord(Versioned, _Record):
    """bench.json."""

    FORMAT = Format(BENCH_FILE, 1, (stamped,))

    name: str
    axis: Axis
    sweep: dict[str, list[Any]]
    variants: list[str]
    settings: Settings
    host: Host
    started: str = Field(description="When the bench started (ISO 8601, local time).")
    points: list[BenchPoint] = Field(default_factory=list)
    flatten: dict[str, dict[str, Flatten]] = Field(
        default_factory=dict, description="Variant -> rate -> where its gain flattens."
    )
    findings: list[str] = Field(default_factory=list)
    overhead: Overhead | None = None


def write_bench(run_dir: Path, record: BenchRecord) -> None:
    write_json_atomic(run_dir / BENCH_FILE, record.as_written())


def read_bench(run_dir: Path, *, strict: bool = False) -> BenchRecord | None:
    """The run's bench.json; None when there is none, or it is damaged (with `strict`, a
    RunFileError naming it)."""
    return read_record(BenchRecord, run_dir / BENCH_FILE, strict=strict)
