"""Where a run stands, from its unit files and (for Slurm runs) the jobs Slurm still knows."""

from __future__ import annotations

from pathlib import Path

from runner.errors import UserInputError
from runner.manifest.parse import read_yaml
from runner.record.rundir import UnitRef, read_json, read_status

TERMINAL = ("done", "failed")


def _units(run_dir: Path) -> list[UnitRef]:
    path = run_dir / "resolved.yaml"
    if not path.is_file():
        raise UserInputError(f"{run_dir}: not a run directory (no resolved.yaml)")
    res, _ = read_yaml(path)
    units = [UnitRef(v, s) for v in res["variants"] for s in res["seeds"]]
    _require_records(run_dir, units)
    return units


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


def _slurm_update(run_dir: Path, units: list[UnitRef]) -> dict[str, str]:
    """Job states of a Slurm run; units whose job ended unfinished are marked failed."""
    from runner.executors.slurm import jobs_file, reconcile, require_slurm, slurm_states

    ids: dict[str, str] = read_json(jobs_file(run_dir)) or {}
    if not ids:
        return {}
    require_slurm()
    keyed = {u.key: u for u in units}
    open_ids = {
        k: j
        for k, j in ids.items()
        if k in keyed and read_status(keyed[k].dir(run_dir)).get("state") not in TERMINAL
    }
    reconcile(run_dir, open_ids, keyed)
    states = slurm_states(list(open_ids.values()))
    return {k: f"{j} {states.get(j, '')}".strip() for k, j in ids.items()}


def collect(run_dir: Path) -> tuple[list[tuple[str, ...]], bool, bool]:
    """(table rows, every unit ended, some unit failed)."""
    units = _units(run_dir)
    jobs = _slurm_update(run_dir, units)
    terminal = TERMINAL if jobs else (*TERMINAL, "interrupted")  # Slurm requeues interrupted
    rows: list[tuple[str, ...]] = []
    ended, failed = True, False
    for u in units:
        st = read_status(u.dir(run_dir))
        state = st.get("state", "pending")
        prog = read_json(u.dir(run_dir) / "progress.json") or {}
        steps = f"{prog.get('steps', 0):,}/{prog.get('total', 0):,}" if prog else "-"
        error = str(st.get("error") or "")
        rows.append((u.key, str(state), jobs.get(u.key, "-"), steps, error[:120]))
        ended = ended and state in terminal
        failed = failed or state == "failed"
    return rows, ended, failed
