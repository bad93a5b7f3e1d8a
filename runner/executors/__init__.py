"""Executors run units behind one interface: `launch(run_dir, units, jobs, ...) -> {unit: exit}`.

Both start `python -m runner.jobs.unit` per unit, so a unit runs the same code wherever it lands.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from runner.rundir import UnitRef

Tick = Callable[[], None]
EXECUTORS = ("local", "ray")


def launch(
    name: str,
    run_dir: Path,
    units: list[UnitRef],
    jobs: list[str],
    *,
    max_parallel: int,
    cpus_per_unit: int,
    on_tick: Tick,
    address: str | None = None,
) -> dict[UnitRef, int]:
    if name == "local":
        from runner.executors.local import launch as local_launch

        return local_launch(run_dir, units, jobs, max_parallel=max_parallel, on_tick=on_tick)
    if name == "ray":
        from runner.executors.ray import launch as ray_launch

        return ray_launch(
            run_dir, units, jobs, cpus_per_unit=cpus_per_unit, on_tick=on_tick, address=address
        )
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
