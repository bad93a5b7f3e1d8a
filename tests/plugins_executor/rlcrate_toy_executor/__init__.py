"""A toy executor, for the tests only: one module implementing `runner.executors.base.Executor`,
a package of its own whose entry point (`rlcrate.executors`: toy) is all that registers it
(tests/plugins_executor: the module beside its dist-info, as pip installs it; on the path only
of the tests that use it, so its `--toy-note` is not an option of every test's command line).
It runs the units one after another, here, and leaves its `--toy-note` beside each unit it ran.
"""

from __future__ import annotations

import subprocess

from runner.executors import unit_command
from runner.executors.base import Executor, ExecutorSettings, Plan, Tick, option
from runner.record.rundir import UnitRef


class ToySettings(ExecutorSettings):
    note: str = option("--toy-note", "Written to toy.txt beside each unit the toy ran.", "")


class Toy(Executor[ToySettings]):
    """Units in turn, here; nothing to check, report or cancel (the defaults)."""

    Settings = ToySettings
    runs_here = True

    def launch(self, plan: Plan, settings: ToySettings, on_tick: Tick) -> dict[UnitRef, int]:
        results = {}
        for unit in plan.units:
            unit_dir = unit.dir(plan.run_dir)
            unit_dir.mkdir(parents=True, exist_ok=True)
            (unit_dir / "toy.txt").write_text(settings.note)
            with open(unit_dir / "unit.log", "ab") as log:
                cmd = unit_command(plan.run_dir, unit, plan.jobs, plan.pythons)
                results[unit] = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
            on_tick()
        return results
