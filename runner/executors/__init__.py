"""Executor registry: name -> an `Executor`, found by entry point and made when asked for.

Each executor is a class derived from `Executor` (`base.py`): its own `Settings` (from which its
command-line options and profile file are made), `launch`, and `check_reachable`, `status`,
`cancel` and `started_any` where it has more to say than the defaults. The name is looked up
once, where the command line is read (`choose`); after that the runner asks the entry and never
compares its name. The name is recorded in the run's provenance.json, so `rlcrate status` asks
the executor that ran it. All of them start `python -m runner.run.unit` per unit
(`unit_command`), so a unit runs the same code wherever it lands; `python` is the interpreter its
backend names (recorded in resolved.yaml), the runner's own when none.

rlcrate's own executors and those installed packages add are found the same way: entry points in
the group `rlcrate.executors` (`runner.plugins`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from runner import plugins
from runner.errors import UserInputError
from runner.executors.base import ExecutorSettings, Holdings, Plan, Tick

if TYPE_CHECKING:
    from runner.executors.base import Executor
    from runner.record.rundir import UnitRef

DEFAULT = "local"  # where units run when no --executor is given

__all__ = [
    "DEFAULT",
    "Chosen",
    "Plan",
    "Tick",
    "choose",
    "get_executor",
    "holdings",
    "registered",
]


def registered() -> list[str]:
    """Every executor name: rlcrate's own, then the installed packages'."""
    return plugins.names("executor")


@cache
def get_executor(name: str) -> Executor[Any]:
    from runner.executors.base import Executor

    plugin = plugins.find("executor", name)
    if plugin is None:
        raise UserInputError(f"--executor {name!r}: {plugins.unknown('executor', name)}")
    cls = plugins.load("executor", plugin)
    if not (isinstance(cls, type) and issubclass(cls, Executor)):
        raise plugins.not_a("executor", plugin, "runner.executors.base.Executor")
    try:
        return cast("Executor[Any]", cls())
    except TypeError as exc:  # `launch` left out
        raise UserInputError(
            f"the executor {name!r} of the package {plugin.package} ({plugin.target}) is "
            f"incomplete: {exc}"
        ) from None


@dataclass(frozen=True)
class Chosen:
    """An executor looked up by name, with its settings: what a command hands the runner."""

    name: str
    settings: ExecutorSettings

    @property
    def executor(self) -> Executor[Any]:
        return get_executor(self.name)

    def launch(self, plan: Plan, on_tick: Tick) -> dict[UnitRef, int]:
        return self.executor.launch(plan, self.settings, on_tick)

    def check_reachable(self) -> None:
        """Before a run directory is made (UserInputError, BackendUnavailable)."""
        self.executor.check_reachable(self.settings)

    def cancel(self, run_dir: Path, units: list[UnitRef]) -> None:
        """Stop what the executor still holds for `units` (a stopped run: Ctrl-C, SIGTERM)."""
        self.executor.cancel(run_dir, units)

    def record(self) -> dict[str, Any]:
        """What provenance.json records of it: which executor ran the run, told what."""
        return {"name": self.name, "settings": self.settings.model_dump(mode="json")}


def choose(name: str = DEFAULT, settings: ExecutorSettings | None = None) -> Chosen:
    """The executor `name` with `settings` (default: its defaults)."""
    executor = get_executor(name)
    return Chosen(name, settings if settings is not None else executor.Settings())


def _recorded(run_dir: Path) -> str | None:
    """The name of the executor provenance.json says ran this run (None: not recorded)."""
    from runner.record.provenance import read_provenance

    prov = read_provenance(run_dir)
    return prov.executor.name if prov is not None and prov.executor is not None else None


def holdings(run_dir: Path, units: list[UnitRef]) -> Holdings:
    """What the executor that ran this run still holds for `units` (its `status`). A run
    recorded before provenance named its executor: every one of rlcrate's own is asked, and the
    first that holds any unit answers."""
    name = _recorded(run_dir)
    if name is not None:
        return get_executor(name).status(run_dir, units)
    for own in plugins.OWN["executor"]:
        found = get_executor(own).status(run_dir, units)
        if found.units:
            return found
    return Holdings()


def unit_command(
    run_dir: Path, unit: UnitRef, jobs: list[str], pythons: Mapping[str, str | None]
) -> list[str]:
    return [
        pythons.get(unit.variant) or sys.executable,
        "-m",
        "runner.run.unit",
        str(run_dir),
        unit.variant,
        str(unit.seed),
        ",".join(jobs),
    ]
