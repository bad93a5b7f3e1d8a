"""Where a run stands, from its unit files and what its executor still holds (`status`).

Only looks: nothing here writes a unit's state. A unit the executor runs no more without having
finished it (a Slurm job that ended) is shown so (and counts as failed for the exit status); the
runner records that on its next `--resume`. When the executor cannot answer, it says so.

A run whose runner is gone (killed with SIGKILL: no unit could record that it stopped) is told
apart from one still running: no runner holds the run's lock, a unit whose recorded process
(pid and start time, `record.process`) no longer runs is `stopped`, and a pending unit that no
executor holds will not start; the run then ends in the `--resume` command, as an interrupted
run does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import UserInputError
from runner.manifest import read_resolved
from runner.record.lock import runner_holds
from runner.record.process import still_running
from runner.record.progress import read_progress
from runner.record.rundir import UnitRef
from runner.record.status import UnitStatus, read_status

if TYPE_CHECKING:
    from rich.console import Console

TERMINAL = ("done", "failed")


@dataclass
class RunState:
    rows: list[tuple[str, ...]] = field(default_factory=list)
    ended: bool = True  # every unit ended (nothing more will happen without a --resume)
    failed: bool = False  # some unit failed, or its Slurm job ended without finishing it
    notes: list[str] = field(default_factory=list)
    bench_only: bool = False  # a bench run: no units, its results in bench.json
    stopped: bool = False  # some unit will not finish without a --resume (nothing runs it)


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


def _gone(st: UnitStatus, runner_alive: bool | None) -> bool:
    """A running unit whose recorded process no longer runs, while no runner is there to
    record it (a runner that is alive marks such a unit failed itself)."""
    if st.state != "running" or st.process is None or runner_alive:
        return False
    return still_running(st.process) is False


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
    alive = runner_holds(run_dir)
    for u in units:
        st = read_status(u.dir(run_dir), strict=True)
        state: str = st.state  # as recorded, or `stopped`: its process is gone
        prog = read_progress(u.dir(run_dir), strict=True)
        steps = f"{prog.steps:,}/{prog.total:,}" if prog else "-"
        error = st.error or ""
        hold = held.units.get(u.key)
        ended = state in terminal
        if hold is not None and hold.ended and not ended:  # the executor runs it no more
            ended, out.failed, error = True, True, hold.why
        elif hold is None and _gone(st, alive):
            pid = st.process.pid if st.process else "?"
            state, ended, error = "stopped", True, f"its process ({pid}) is gone; nothing runs it"
        elif hold is None and state == "pending" and alive is False:
            ended = True  # no runner to start it
        out.stopped = out.stopped or (ended and state in ("stopped", "pending", "interrupted"))
        out.rows.append((u.key, state, hold.text if hold else "-", steps, error[:120]))
        out.ended = out.ended and ended
        out.failed = out.failed or state == "failed"
    return out


def resume_command(run_dir: Path) -> str:
    """The command that continues a run (a study's: `rlcrate tune`)."""
    command = "tune" if (run_dir / "tune.json").exists() else "run"
    return f"rlcrate {command} {run_dir / 'manifest.yaml'} --resume {run_dir}"


def resume_hint(console: Console, run_dir: Path) -> None:
    """The command that continues the run, on a line of its own that is never wrapped, so it
    pastes as it is from a terminal or a log file."""
    from rich.markup import escape

    console.print("[yellow]stopped; resume with:[/]")
    console.print(escape(resume_command(run_dir)), soft_wrap=True, highlight=False)
