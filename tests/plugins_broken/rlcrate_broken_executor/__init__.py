"""An executor that breaks its contract on purpose, for the tests of `rlcrate plugin check`
only (tests/registry/test_plugin_check.py; on the path of no other test): `runs_here` is not a bool,
`status` returns no Holdings and `started_any` says it started units in a run it never saw.
None of these raises, so only the checker's own checks can find them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.executors.base import Executor, ExecutorSettings, Plan, Tick
from runner.record.rundir import UnitRef


class Broken(Executor[ExecutorSettings]):
    Settings = ExecutorSettings
    runs_here = "yes"  # type: ignore[assignment]  # the breach under test

    def launch(self, plan: Plan, settings: ExecutorSettings, on_tick: Tick) -> dict[UnitRef, int]:
        return {}

    def status(self, run_dir: Path, units: list[UnitRef]) -> Any:
        return {"held": []}

    def started_any(self, run_dir: Path) -> bool:
        return True
