"""Where a run stands, from its unit files and (for Slurm runs) the jobs Slurm still knows.

Only looks: nothing here writes a unit's state. A unit whose Slurm job ended without finishing
it is shown so (and counts as failed for the exit status); the runner records that on its next
`--resume`. When Slurm does not answer, the states are shown as last recorded, and said so.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import UserInputError
from runner.manifest import read_resolved
from runner.record.rundir import UnitRef, read_progress, read_status

TERMINAL = ("done", "failed")


@dataclass
class RunState:
    rows: list[tuple[str, ...]] = field(default_factory=list)
    ended: bool = True  # every unit ended (nothing more will happen without a --resume)
    failed: bool = False  # some unit failed, or its Slurm job ended without finishing it
    notes: list[str] = field(default_factory=list)
    bench_only: bool = False  # a bench run: no units, its results in bench.json


def _require_records(run_dir: Path, units: list[UnitRef]) -> None:
    """A run writes every unit's status.json before it starts one (a bench-only run writes
    bench.json instead): with neither, the units were deleted, not still running."""
    if (run_dir / "bench.json").exists():
        return
    if not any((u.dir(run_dir) / "status.json").exists() for u in units):
        where = run_dir / "units"
        what = "is missing" if not where.is_dir() else "holds no unit's status.json"
        raise UserInputError(
            f"{where}: {what}, so this run's units cannot be found (deleted?); nothing is running"
        )


def _slurm_answers() -> str | None:
    """None when Slurm's controller answers; else why the states below are as last recorded."""
    if shutil.which("scontrol") is None or shutil.which("squeue") is None:
        return "Slurm's commands are not on PATH here; unit states as last recorded"
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        ping = None
    if ping is None or ping.returncode != 0:
        return "Slurm did not answer (scontrol ping); unit states as last recorded"
    return None


def _slurm_jobs(
    run_dir: Path, units: list[UnitRef]
) -> tuple[dict[str, str], dict[str, str], str | None]:
    """({unit key: job id}, {unit key: job state, '' when unknown}) of a Slurm run (empty for
    other runs), and a note when Slurm could not be asked."""
    from runner.executors.slurm import read_jobs, slurm_states

    found = read_jobs(run_dir)  # damaged: one line naming the file (RunFileError)
    if not found:
        return {}, {}, None
    keys = {u.key for u in units}
    ids = {k: str(j) for k, j in found.items() if k in keys}
    note = _slurm_answers()
    if note is not None:
        return ids, {k: "" for k in ids}, note
    states = slurm_states(list(ids.values()))
    return ids, {k: states.get(j, "UNKNOWN") for k, j in ids.items()}, None


def collect(run_dir: Path) -> RunState:
    """The table rows and what they add up to; writes nothing."""
    from runner.executors.slurm import ACTIVE

    units = read_resolved(run_dir).units()  # damaged: one line naming the file (RunFileError)
    out = RunState()
    if not (run_dir / "units").is_dir() and (run_dir / "bench.json").is_file():
        out.bench_only = True  # `rlcrate bench` (or --jobs bench) ran no units
        return out
    _require_records(run_dir, units)
    ids, job_states, note = _slurm_jobs(run_dir, units)
    if note:
        out.notes.append(note)
    terminal = TERMINAL if job_states else (*TERMINAL, "interrupted")  # Slurm requeues those
    for u in units:
        st = read_status(u.dir(run_dir), strict=True)
        state = str(st.get("state", "pending"))
        prog = read_progress(u.dir(run_dir), strict=True)
        steps = f"{prog.steps:,}/{prog.total:,}" if prog else "-"
        error = str(st.get("error") or "")
        job = job_states.get(u.key)
        ended = state in terminal
        if job and job not in ACTIVE and not ended:  # Slurm answered: the job is gone
            ended, out.failed = True, True
            error = f"Slurm job {ids[u.key]} ended {job} before the unit finished"
        shown_job = f"{ids[u.key]} {job}".strip() if job is not None else "-"
        out.rows.append((u.key, state, shown_job, steps, error[:120]))
        out.ended = out.ended and ended
        out.failed = out.failed or state == "failed"
    return out
