"""A job's result: what a trainer's hook returns (its train, evaluate or bench figures), typed by
the record it goes into (`train.TrainResult`, `eval.EvalResult`, `bench.BenchResult`). `fields()`
is what the record is given: the fields the hook set, so a status.json merge keeps what the unit
recorded before, and a point keeps the keys its trainer measured.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    NOT_RESULT: ClassVar[set[str]] = set()  # a record's own fields, where a record derives from it

    def fields(self) -> dict[str, Any]:
        """The fields the hook set (defaults it left alone are not written), as JSON values."""
        return self.model_dump(mode="json", exclude_unset=True, exclude=self.NOT_RESULT)
