"""Executors run units behind one interface: `launch(run_dir, units, jobs, ...) -> {unit: exit}`.

Both start `python -m runner.jobs.unit` per unit, so a unit runs the same code wherever it lands.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.rundir import UnitRef

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
    max_parallel: int,
    needs: dict[UnitRef, Needs],
    on_tick: Tick,
    address: str | None = None,
    cluster: Any = None,
) -> dict[UnitRef, int]:
    """`needs`: each unit's CPUs and GPUs; `cluster`: the Slurm settings (flags, profile)."""
    if name == "local":
        from runner.executors.local import launch as local_launch

        return local_launch(run_dir, units, jobs, max_parallel=max_parallel, on_tick=on_tick)
    if name == "ray":
        from runner.executors.ray import launch as ray_launch

        return ray_launch(run_dir, units, jobs, needs=needs, on_tick=on_tick, address=address)
    if name == "slurm":
        from runner.executors.slurm import launch as slurm_launch

        return slurm_launch(run_dir, units, jobs, needs=needs, on_tick=on_tick, settings=cluster)
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


def unit_command(run_dir: Path, unit: UnitRef, jobs: list[str]) -> list[str]:
    import sys

    return [
        sys.executable,
        "-m",
        "runner.jobs.unit",
        str(run_dir),
        unit.variant,
        str(unit.seed),
        ",".join(jobs),
    ]
