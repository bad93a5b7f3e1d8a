"""How a unit ended, always written down: by the unit itself when it can, else by the runner.

A unit records done / failed / interrupted in its status.json. When it cannot (killed with
SIGKILL, out of memory, the disk full, the runner itself killed), the runner records it from the
exit status when the process ends, or on the next `--resume` for units a dead runner left
`running`. Temporary files (`.name.xxxx` beside the file being written) are removed on every
path, which on a full disk also frees the room the record needs.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import traceback
from collections.abc import Callable
from pathlib import Path

from runner.manifest.resolved import ResolvedRun
from runner.manifest.schema import Manifest
from runner.record.eval import read_eval
from runner.record.rundir import UnitRef
from runner.record.status import (
    NO_SPACE,
    STATUS_FILE,
    State,
    StatusFields,
    UnitStatus,
    read_status,
    recorded_status,
    together,
    write_status,
    write_status_anyway,
)


def describe(exc: BaseException) -> str:
    """One line for status.json; a full disk says so first."""
    if isinstance(exc, OSError) and exc.errno in NO_SPACE:
        where = f" writing {exc.filename}" if exc.filename else ""
        return f"out of disk space{where} (OSError: {exc.strerror})"
    return f"{type(exc).__name__}: {exc}".strip()


def remove_debris(folder: Path) -> None:
    """Delete the temporary files an interrupted write leaves (never a real file: ours start
    with '.' and the lock is `.lock`)."""
    for sub in (folder, folder / "checkpoints"):
        with contextlib.suppress(OSError):
            for p in sub.iterdir():
                if p.name.startswith(".") and p.name != ".lock" and p.is_file():
                    p.unlink(missing_ok=True)


def record_failure(unit_dir: Path, exc: BaseException, fields: StatusFields) -> None:
    """The unit failed: debris removed, traceback to error.log, reason to status.json. Each step
    is best effort, so a full disk still gets as much written as fits."""
    remove_debris(unit_dir)
    log = unit_dir / "error.log"
    try:
        log.write_text(traceback.format_exc(), encoding="utf-8")
    except OSError:
        log.unlink(missing_ok=True)  # never an empty or cut-off log
    with contextlib.suppress(OSError):
        write_status_anyway(unit_dir, "failed", **together(fields, {"error": describe(exc)}))


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _wall(status: UnitStatus | None, until: float | None = None) -> float | None:
    """Earlier segments plus this one (from its start to `until`, default now)."""
    import time

    if status is None or status.started is None:
        return None
    end = until if until is not None else time.time()
    return (status.wall_time_s or 0.0) + max(0.0, end - status.started)


def settle(
    run_dir: Path, units: list[UnitRef], results: dict[UnitRef, int | None], stopping: bool
) -> None:
    """After the executor returns (or is stopped): every unit it started that did not record
    its own end gets one, from its exit status."""
    import time

    for unit in units:
        unit_dir = unit.dir(run_dir)
        status = recorded_status(unit_dir)
        state = status.state if status is not None else None
        if unit not in results and state != "running":
            continue  # never started
        remove_debris(unit_dir)
        if state in ("done", "failed", "interrupted"):
            continue
        code = results.get(unit)
        new: State
        if stopping or code == 130:
            new, why = "interrupted", "stopped with the runner before it could record it"
        elif code is not None and code < 0:
            new, why = "failed", f"killed by {_signal_name(code)} (out of memory, or killed)"
        else:
            new, why = "failed", f"exited with status {code} without recording why; see unit.log"
        with contextlib.suppress(OSError):
            write_status_anyway(
                unit_dir, new, error=why, finished=time.time(), wall_time_s=_wall(status)
            )


def recover_stale(run_dir: Path, units: list[UnitRef]) -> list[str]:
    """On resume (the run lock held, so no unit is really running): units left `running` by a
    runner that died are marked interrupted; returns their keys."""
    stale = []
    for unit in units:
        unit_dir = unit.dir(run_dir)
        status = recorded_status(unit_dir)
        if status is not None and status.state == "running":
            write_status(
                unit_dir,
                "interrupted",
                error="the runner stopped without recording it",
                wall_time_s=_wall(status, status.updated),
            )
            stale.append(unit.key)
        remove_debris(unit_dir)
    remove_debris(run_dir)
    return stale


def unreadable_status(run_dir: Path, units: list[UnitRef]) -> list[Path]:
    """status.json files that exist but cannot be read (the unit then runs again)."""
    bad = []
    for unit in units:
        path = unit.dir(run_dir) / STATUS_FILE
        if path.exists() and recorded_status(unit.dir(run_dir)) is None:
            bad.append(path)
    return bad


def _steps_reader(config: Manifest) -> Callable[[Path], int | None] | None:
    """How the variant's trainer reads the steps a model holds (`CountsSteps`); None: it
    cannot."""
    from runner.trainers import trainer_of
    from runner.trainers.abilities import CountsSteps

    trainer = trainer_of(config)
    return trainer.saved_steps if isinstance(trainer, CountsSteps) else None


def damaged_results(
    run_dir: Path, units: list[UnitRef], jobs: list[str], configs: dict[str, Manifest]
) -> list[tuple[Path, str]]:
    """Units recorded done whose results are unreadable (eval.json, model.zip), whose eval.json
    disagrees with its own episodes, or whose model trained less than its budget (by the
    model's own count, where its trainer reads one): set back to pending so they run again (a
    finished training is kept and only evaluated again). Returns (file, why) for each."""
    readers = {name: _steps_reader(config) for name, config in configs.items()}
    bad = []
    for unit in units:
        unit_dir = unit.dir(run_dir)
        status = recorded_status(unit_dir)
        if status is None or status.state != "done":
            continue
        wanted = [unit_dir / "model.zip"] if "train" in jobs else []
        wanted += [unit_dir / "eval.json"] if "eval" in jobs else []
        for path in wanted:
            why = "missing or unreadable"
            if path.is_file() and path.suffix == ".zip":
                reader, budget = readers[unit.variant], configs[unit.variant].train.timesteps
                steps = reader(path) if reader is not None else None
                if steps is None or steps >= budget:  # None: no count to read (or unreadable:
                    continue  # that fails where the model is read)
                why = f"trained {steps} of {budget} steps"
            elif path.is_file() and read_eval(path) is not None:
                continue
            elif path.is_file():
                why = "damaged, or its mean disagrees with its episodes"
            write_status(unit_dir, "pending", error=f"{path.name}: {why}")
            bad.append((path, why))
            break
    return bad


def recover_done(
    run_dir: Path, units: list[UnitRef], jobs: list[str], configs: dict[str, Manifest]
) -> list[str]:
    """Units whose status.json is missing or unreadable, but whose files show them finished: a
    final model that trained its budget and (when evaluated) an eval.json of that model, whole
    and written after it. Their status.json is rebuilt as done from those files rather than the
    work done again; returns their keys."""
    from runner.record.seeding import derive
    from runner.trainers.resume import finished_training

    out = []
    for unit in units:
        d = unit.dir(run_dir)
        if recorded_status(d) is not None or not d.is_dir():
            continue
        config = configs[unit.variant]
        record = finished_training(d, config.train.timesteps, _steps_reader(config))
        if record is None:
            continue
        fields: StatusFields = {
            "timesteps_done": record.timesteps_done,
            "train_wall_time_s": record.train_wall_time_s,
            "train_started": record.train_started,
            "train_steps_per_s": record.train_steps_per_s,
            "resumed_from": record.resumed_from,
            "resumes": record.resumes,
        }
        if "eval" in jobs:
            ev = read_eval(d / "eval.json")
            if ev is None or (d / "eval.json").stat().st_mtime < (d / "model.zip").stat().st_mtime:
                continue
            fields["eval_mean"], fields["eval_std"] = ev.mean, ev.std
        why = "status.json was unreadable; rebuilt from model.zip, train.json, eval.json"
        unit_fields: StatusFields = {"variant": unit.variant, "seed": unit.seed,
                                     "seeds": derive(unit.seed), "jobs": jobs, "error": None,
                                     "recovered": why}  # fmt: skip
        write_status(d, "done", **together(fields, unit_fields))
        out.append(unit.key)
    return out


def anything_started(run_dir: Path, res: ResolvedRun) -> bool:
    """Whether a unit of this run got further than `pending` (a state, a unit.log) or a bench
    ran; what an executor took beyond that it says itself (`started_any`)."""
    for u in res.units():
        d = u.dir(run_dir)
        if read_status(d).state != "pending" or (d / "unit.log").exists():
            return True
    return (run_dir / "bench.json").exists()


def remove_unused(run_dir: Path, out: Path) -> None:
    """Remove a run directory no unit used, and its name and output folders if now empty."""
    shutil.rmtree(run_dir, ignore_errors=True)
    for folder in (run_dir.parent, out):
        with contextlib.suppress(OSError):  # not empty: someone else's runs are there
            folder.rmdir()
