"""Executor registry: name -> module, imported only when asked for.

Each executor module implements the `Executor` protocol (`base.py`): its own `Settings` (from
which its command-line options and profile file are made), `launch`, `status` and `cancel`.
The name is looked up once, where the command line is read (`choose`); after that the runner
asks the entry and never compares its name. All of them start `python -m runner.run.unit` per
unit (`unit_command`), so a unit runs the same code wherever it lands; `python` is the
interpreter its backend names (recorded in resolved.yaml), the runner's own when none.

`RLCRATE_EXECUTORS=name=module[,name=module]` registers further executors (modules outside
rlcrate implementing the same protocol); the tests add a toy one this way.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from runner.errors import UserInputError
from runner.executors.base import ExecutorSettings, Plan, Tick

if TYPE_CHECKING:
    from runner.executors.base import Executor
    from runner.record.rundir import UnitRef

EXECUTORS: Final[dict[str, str]] = {
    name: f"runner.executors.{name}" for name in ("local", "ray", "slurm")
}
DEFAULT = "local"  # where units run when no --executor is given
EXTRA_VAR = "RLCRATE_EXECUTORS"

__all__ = [
    "DEFAULT",
    "EXECUTORS",
    "Chosen",
    "Plan",
    "Tick",
    "choose",
    "get_executor",
    "registered",
]


def registered() -> dict[str, str]:
    """Every executor name -> its module: rlcrate's own, then those RLCRATE_EXECUTORS adds."""
    extra = {}
    for item in filter(None, (x.strip() for x in os.environ.get(EXTRA_VAR, "").split(","))):
        name, sep, module = item.partition("=")
        if not sep or not name.strip() or not module.strip():
            raise UserInputError(f"{EXTRA_VAR}: expected name=module, got {item!r}")
        extra[name.strip()] = module.strip()
    return {**EXECUTORS, **extra}


@cache
def get_executor(name: str) -> Executor[Any]:
    known = registered()
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UserInputError(
            f"--executor {name!r}: unknown executor{hint} (expected one of {', '.join(known)})"
        )
    try:
        return cast("Executor[Any]", importlib.import_module(known[name]))
    except ImportError as exc:
        raise UserInputError(
            f"--executor {name}: cannot import its module {known[name]} ({exc})"
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


def choose(name: str = DEFAULT, settings: ExecutorSettings | None = None) -> Chosen:
    """The executor `name` with `settings` (default: its defaults)."""
    executor = get_executor(name)
    return Chosen(name, settings if settings is not None else executor.Settings())


def check_reachable(chosen: Chosen) -> None:
    """Before a run directory is made: the executor's tools are installed and its cluster's
    address is well formed and answers (UserInputError, BackendUnavailable)."""
    if chosen.name == "ray":
        from runner.executors.ray import check_address

        check_address(chosen.settings.model_dump().get("address"))
    elif chosen.name == "slurm":
        from runner.executors.slurm import require_slurm

        require_slurm()


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
