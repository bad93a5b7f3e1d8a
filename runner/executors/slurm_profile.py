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

from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

from runner.executors.base import ExecutorSettings, option

DEFAULT_TIME = "04:00:00"


class SlurmSettings(ExecutorSettings):
    profile_option: ClassVar[str | None] = "--profile"

    partition: str | None = option("--partition", "Slurm partition.")
    account: str | None = option("--account", "Slurm account.")
    time: str | int = option(
        "--time", "Slurm time limit per unit job (minutes or [D-]HH:MM:SS).", DEFAULT_TIME
    )
    sbatch: dict[str, str | int | bool] = option(
        "--sbatch",
        "Further sbatch option KEY=VALUE (e.g. qos=long); repeatable.",
        default_factory=dict,
    )
    setup: list[str] = Field(
        default_factory=list, description="Shell lines run in the job before the unit."
    )
    python: str | None = Field(
        None, description="The Python on the compute nodes (default: the one running rlcrate)."
    )
    image: str | None = Field(None, description="A .sif image: each unit runs in it (Apptainer).")
    detach: bool = option(
        "--detach",
        "slurm: return once submitted; follow with `rlcrate status RUN_DIR`.",
        False,
        cli_only=True,
    )

    @field_validator("time")
    @classmethod
    def _time(cls, v: str | int) -> str:
        minutes(str(v))
        return str(v)

    @property
    def minutes(self) -> int:
        return minutes(str(self.time))

    @property
    def detached(self) -> bool:
        return self.detach

    def unit_image(self) -> str | None:
        return self.image

    def takes_image(self, image: str) -> bool:
        """A .sif: each unit's job runs it under Apptainer, the runner stays here."""
        if not image.endswith(".sif"):
            return False
        self.image = str(Path(image).resolve())
        return True


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
