"""Where a run stands, from its unit files and what its executor still holds (Slurm's jobs)."""

from __future__ import annotations

from pathlib import Path

from runner.manifest import read_resolved
from runner.record.rundir import UnitRef, read_progress, read_status

TERMINAL = ("done", "failed")


def executor_states(run_dir: Path, units: list[UnitRef]) -> dict[str, str]:
    """unit key -> what the executor that holds the run's units says of each ({} when none
    does: their files are all there is)."""
    from runner.executors import get_executor, registered

    for name in registered():
        states = get_executor(name).status(run_dir, units)
        if states:
            return states
    return {}


def collect(run_dir: Path) -> tuple[list[tuple[str, ...]], bool, bool]:
    """(table rows, every unit ended, some unit failed). A damaged file of the run is one line
    naming it (RunFileError)."""
    units = read_resolved(run_dir).units()
    jobs = executor_states(run_dir, units)
    # an executor that holds the units (Slurm) requeues interrupted ones: not ended yet
    terminal = TERMINAL if jobs else (*TERMINAL, "interrupted")
    rows: list[tuple[str, ...]] = []
    ended, failed = True, False
    for u in units:
        st = read_status(u.dir(run_dir), strict=True)
        state = st.get("state", "pending")
        prog = read_progress(u.dir(run_dir), strict=True)
        steps = f"{prog.steps:,}/{prog.total:,}" if prog else "-"
        error = str(st.get("error") or "")
        rows.append((u.key, str(state), jobs.get(u.key, "-"), steps, error[:120]))
        ended = ended and state in terminal
        failed = failed or state == "failed"
    return rows, ended, failed
