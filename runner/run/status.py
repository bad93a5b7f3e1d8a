"""Where a run stands, from its unit files and what its executor still holds (`status`).

Only looks: nothing here writes a unit's state. A unit the executor runs no more without having
finished it (a Slurm job that ended) is shown so (and counts as failed for the exit status); the
runner records that on its next `--resume`. When the executor cannot answer, it says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import UserInputError
from runner.manifest import read_resolved
from runner.record.rundir import UnitRef, read_progress
from runner.record.status import read_status

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


def collect(run_dir: Path) -> RunState:
    """The table rows and what they add up to; writes nothing."""
    from runner.executors import holdings

    units = read_resolved(run_dir).units()  # damaged: one line naming the file (RunFileError)
    out = RunState()
    if not (run_dir / "units").is_dir() and (run_dir / "bench.json").is_file():
        out.bench_only = True  # `rlcrate bench` (or --jobs bench) ran no units
        return out
    _require_records(run_dir, units)
    held = holdings(run_dir, units)
    if held.note:
        out.notes.append(held.note)
    terminal = TERMINAL if held.requeues else (*TERMINAL, "interrupted")
    for u in units:
        st = read_status(u.dir(run_dir), strict=True)
        state = st.state
        prog = read_progress(u.dir(run_dir), strict=True)
        steps = f"{prog.steps:,}/{prog.total:,}" if prog else "-"
        error = st.error or ""
        hold = held.units.get(u.key)
        ended = state in terminal
        if hold is not None and hold.ended and not ended:  # the executor runs it no more
            ended, out.failed, error = True, True, hold.why
        out.rows.append((u.key, state, hold.text if hold else "-", steps, error[:120]))
        out.ended = out.ended and ended
        out.failed = out.failed or state == "failed"
    return out
