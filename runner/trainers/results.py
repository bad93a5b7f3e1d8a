"""What a trainer's hooks return, typed (Hydra's `JobReturn` is the model). The train, eval and
bench results are the models of the records they go into, defined once in `runner.record` and
named here for trainer authors: `TrainResult` (`record.train`: the unit's status.json and
train.json), `EvalResult` (`record.eval`: status.json), `BenchResult` with its `Rate`, `Spread`,
`Profile` and `Harness` (`record.bench`: one point of bench.json). A determinism attempt is
compared in memory and written nowhere: its model is this module's own.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runner.record.bench import BenchResult, Harness, Profile, Rate, Spread
from runner.record.eval import EvalResult
from runner.record.train import TrainResult

__all__ = [
    "BenchResult",
    "DeterminismAttempt",
    "EvalResult",
    "Harness",
    "Profile",
    "Rate",
    "Spread",
    "TrainResult",
]


class DeterminismAttempt(BaseModel):
    """One attempt of `check-determinism`: what two attempts are compared on."""

    model_config = ConfigDict(extra="forbid")

    steps: list[list[str]] = Field(
        description="Per vector step, digests [observations, actions, rewards]; empty when the "
        "loop cannot be watched step by step."
    )
    params: str = Field(description="Digest of the final parameters.")
    env_steps: int = Field(description="Env steps actually trained.")
    compares: str = Field(description="What is compared, in words, for the user.")
    seconds: float | None = Field(None, description="How long the attempt took.")

    def fields(self) -> dict[str, Any]:
        """The keys the hook set, as JSON values."""
        return self.model_dump(mode="json", exclude_unset=True)
