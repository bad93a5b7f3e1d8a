"""Executors run units behind one interface: `launch(run_dir, units, jobs, ...) -> {unit: exit}`.

Both start `python -m runner.run.unit` per unit, so a unit runs the same code wherever it lands;
`python` is the interpreter its backend names (`pythons`: variant -> executable, recorded in
resolved.yaml), the runner's own when none.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.record.rundir import UnitRef

if TYPE_CHECKING:
    from runner.executors.needs import Needs

Tick = Callable[[], None]
EXECUTORS = ("local", "ray", "slurm")


def launch(
    name: str,
    run_dir: Path,
    units: list[UnitRef],
    jobs: list[str],
    *,
    pythons: Mapping[str, str | None],
    max_parallel: int,
    needs: dict[UnitRef, Needs],
    on_tick: Tick,
    address: str | None = None,
    cluster: Any = None,
) -> dict[UnitRef, int]:
    """`needs`: each unit's CPUs and GPUs; `cluster`: the Slurm settings (flags, profile)."""
    if name == "local":
        from runner.executors.local import launch as local_launch

        return local_launch(
            run_dir, units, jobs, pythons=pythons, max_parallel=max_parallel, on_tick=on_tick
        )
    if name == "ray":
        from runner.executors.ray import launch as ray_launch

        return ray_launch(
            run_dir, units, jobs, pythons=pythons, needs=needs, on_tick=on_tick, address=address
        )
    if name == "slurm":
        from runner.executors.slurm import launch as slurm_launch

        return slurm_launch(
            run_dir, units, jobs, pythons=pythons, needs=needs, on_tick=on_tick, settings=cluster
        )
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


def check_reachable(name: str, address: str | None) -> None:
    """Before a run directory is made: the executor's tools are installed and its cluster's
    address is well formed and answers (UserInputError, BackendUnavailable)."""
    if name == "ray":
        from runner.executors.ray import check_address

        check_address(address)
    elif name == "slurm":
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
