"""Slurm settings for `--executor slurm`: from command-line flags and a profile file, never from
the manifest (which stays portable between clusters).

A profile is a small YAML file, e.g. `~/.config/rlcrate/mycluster.yaml`:

    partition: gpu
    account: proj123
    time: "08:00:00"            # per job; units checkpoint and requeue when it runs out
    sbatch: {qos: normal, constraint: a100}
    setup: ["module load apptainer"]

Flags override the profile key by key; `--sbatch KEY=VALUE` adds to the profile's `sbatch`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runner.errors import UserInputError
from runner.manifest.problems import Problem

DEFAULT_TIME = "04:00:00"


class SlurmSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partition: str | None = Field(None, description="sbatch --partition")
    account: str | None = Field(None, description="sbatch --account")
    time: str | int = Field(
        DEFAULT_TIME, description="sbatch --time per job: minutes or [D-]HH:MM:SS"
    )
    sbatch: dict[str, str | int | bool] = Field(
        default_factory=dict, description="Further sbatch options: {option: value} (no dashes)."
    )
    setup: list[str] = Field(
        default_factory=list, description="Shell lines run in the job before the unit."
    )
    python: str | None = Field(
        None, description="The Python on the compute nodes (default: the one running rlcrate)."
    )
    image: str | None = Field(None, description="A .sif image: each unit runs in it (Apptainer).")
    detach: bool = False

    @field_validator("time")
    @classmethod
    def _time(cls, v: str | int) -> str:
        minutes(str(v))
        return str(v)

    @property
    def minutes(self) -> int:
        return minutes(str(self.time))


def minutes(text: str) -> int:
    """Slurm's time formats (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S) as whole minutes (at least 1)."""
    days, dash, rest = text.strip().rpartition("-")
    parts = rest.split(":") if days or not dash else []
    try:
        nums = [int(p) for p in parts]
        d = int(days) if days else 0
    except ValueError:
        nums, d = [], 0
    if not nums or len(nums) > 3 or min(nums) < 0 or d < 0:
        raise ValueError(f"expected minutes or [D-]HH:MM:SS, got {text!r}")
    if days:  # D-H, D-H:M, D-H:M:S
        h, m, s = (nums + [0, 0])[:3]
    else:  # M, M:S, H:M:S
        h, m, s = [0, *nums, 0][:3] if len(nums) <= 2 else nums
    return max(1, d * 1440 + h * 60 + m + (s + 59) // 60)


def _problem(source: str, lines: dict, loc: tuple[Any, ...], message: str) -> UserInputError:
    from runner.manifest.problems import line_of

    return UserInputError(str(Problem(source, line_of(loc, lines), loc, message)))


def load_profile(path: Path) -> dict[str, Any]:
    """The profile's settings as a dict; the first problem as a one-line UserInputError."""
    from runner.manifest.load import parse_yaml, read_text

    source = str(path)
    data, lines = parse_yaml(read_text(path), source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _problem(source, lines, (), "expected a mapping of Slurm settings")
    known = [k for k in SlurmSettings.model_fields if k != "detach"]
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise _problem(
                source, lines, (key,), f"unknown key; {hint}expected one of {', '.join(known)}"
            )
    try:
        SlurmSettings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        raise _problem(source, lines, tuple(err["loc"]), msg) from None
    return dict(data)


def settings(
    profile: Path | None, flags: dict[str, Any], sbatch: dict[str, str | int | bool]
) -> SlurmSettings:
    """Profile, then flags (those given) on top."""
    data = load_profile(profile) if profile else {}
    data.update({k: v for k, v in flags.items() if v is not None})
    data["sbatch"] = {**data.get("sbatch", {}), **sbatch}
    if "time" in data:
        data["time"] = str(data["time"])
    try:
        return SlurmSettings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise UserInputError(f"--{field}: {err['msg'].removeprefix('Value error, ')}") from None
