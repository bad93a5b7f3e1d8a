"""Ray executor: one Ray task per unit, each running the same unit command as the local executor.

The run directory must be on storage every node sees (a shared or network file system); the
task only needs the path. `address` is a Ray cluster address (default: RAY_ADDRESS, else a local
cluster started for the run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from runner.errors import BackendUnavailable
from runner.executors import Tick, unit_command
from runner.rundir import UnitRef


def _run_unit(cmd: list[str], log_path: str) -> int:
    import subprocess

    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return proc.wait()
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait()


def launch(
    run_dir: Path,
    units: list[UnitRef],
    jobs: list[str],
    *,
    pythons: Mapping[str, str | None],
    cpus_per_unit: int,
    on_tick: Tick,
    address: str | None = None,
) -> dict[UnitRef, int]:
    try:
        import ray
    except ImportError:
        raise BackendUnavailable(
            "the ray executor needs Ray (pip install 'rlcrate[ray]')"
        ) from None
    address = address or os.environ.get("RAY_ADDRESS")
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}},
        )
    task = ray.remote(num_cpus=cpus_per_unit, max_retries=0)(_run_unit)
    refs = {}
    for unit in units:
        unit.dir(run_dir).mkdir(parents=True, exist_ok=True)
        cmd = unit_command(run_dir, unit, jobs, pythons)  # cmd[0]: the unit's interpreter
        ref = task.remote(cmd, str(unit.dir(run_dir) / "unit.log"))
        refs[ref] = unit
    results: dict[UnitRef, int] = {}
    try:
        while refs:
            done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0.5)
            for ref in done:
                unit = refs.pop(ref)
                try:
                    results[unit] = ray.get(ref)
                except ray.exceptions.RayError:
                    results[unit] = 1
            on_tick()
            time.sleep(0.1)
    except KeyboardInterrupt:
        for ref in refs:
            ray.cancel(ref, force=False)
        raise
    finally:
        if started_here:
            ray.shutdown()
    return results
