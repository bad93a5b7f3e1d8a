"""Run one unit (variant, seed) here: `python -m runner.run.unit RUN_DIR VARIANT SEED JOBS`.

Executors start this as a child process so a crashing env or a segfault takes down one unit only.
The unit's config comes from the run's resolved.yaml, the one source of truth for what ran.
"""

from __future__ import annotations

import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any, cast

from runner.manifest.resolved import read_resolved
from runner.manifest.schema import Manifest, VideoSpec
from runner.record.eval import EvalResult
from runner.record.process import this_process
from runner.record.result import Result
from runner.record.rundir import UnitRef
from runner.record.seeding import derive, seed_everything
from runner.record.status import (
    Interpreter,
    StatusFields,
    read_status,
    together,
    write_status,
)
from runner.record.train import TrainResult
from runner.run.finish import record_failure, remove_debris
from runner.trainers import quick_exit, trainer_of
from runner.trainers.base import STOP, STOPS_ITSELF
from runner.trainers.resume import check_final


def unit_config(run_dir: Path, variant: str, seed: int, *, training: bool = False) -> Manifest:
    """The config unit (variant, seed) runs. About to train from a warm start's parent: its
    files are checked against the hashes pinned when the run started (RunFileError if not)."""
    resolved = read_resolved(run_dir).variants[variant]
    if training and resolved.parent is not None:
        from runner.checks.lineage import verify

        verify(resolved.parent, seed)
    return resolved.unit_config(seed)


def status_fields(
    model: type[TrainResult] | type[EvalResult], result: object, what: str
) -> StatusFields:
    """A job's result (`what` returned it) as the status.json fields it sets: those the trainer
    gave. A result that is not one (a plugin's trainer is typed, not checked) is a TypeError in
    one line, naming the field."""
    from pydantic import ValidationError

    data = result.fields() if isinstance(result, Result) else result
    try:
        found = model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "its result"
        raise TypeError(f"{what} returned {where}: {err['msg']}") from None
    return cast(StatusFields, found.fields())


def _sigterm(signum: int, frame: Any) -> None:
    STOP.set()  # the trainer's loop stops at its next step, even if this exception is swallowed
    if not STOPS_ITSELF.is_set():  # else at its next rollout boundary, checkpointed exactly
        raise KeyboardInterrupt


def run_unit(run_dir: Path, variant: str, seed: int, jobs: list[str]) -> int:
    """Exit status: 0 done, 1 failed, 130 interrupted."""
    unit = UnitRef(variant, seed)
    unit_dir = unit.dir(run_dir)
    unit_dir.mkdir(parents=True, exist_ok=True)
    seeds = derive(seed)
    started = time.time()
    before = read_status(unit_dir).wall_time_s or 0.0  # earlier segments

    def wall() -> float:
        return before + time.time() - started

    write_status(
        unit_dir,
        "running",
        variant=variant,
        seed=seed,
        seeds=seeds,
        jobs=jobs,
        python=Interpreter(executable=sys.executable, version=platform.python_version()),
        process=this_process(),
        started=started,
        error=None,
        finished=None,
    )
    fields: StatusFields = {}
    try:
        cfg = unit_config(run_dir, variant, seed, training="train" in jobs)
        trainer = trainer_of(cfg)
        quick_exit.allow(trainer.QUICK_EXIT)
        seed_everything(seeds, torch_threads=cfg.algo.threads(), with_torch=trainer.USES_TORCH)
        if "train" in jobs:
            # keeps a finished training
            trained = trainer.train(cfg, unit_dir, seeds)
            fields.update(
                status_fields(TrainResult, trained, f"the {trainer.name} trainer's train")
            )
            write_status(unit_dir, "running", **fields)
            if STOP.is_set():  # heard while a loop that stops itself finished its last rollout
                raise KeyboardInterrupt
        if "eval" in jobs:
            check_final(unit_dir)  # the model's files as training left them, before any read
            if "video" in jobs and cfg.eval.video is None:  # `rlcrate eval --video`
                cfg.eval.video = VideoSpec()
            evaluated = trainer.evaluate(cfg, unit_dir, seeds)
            fields.update(
                status_fields(EvalResult, evaluated, f"the {trainer.name} trainer's evaluate")
            )
    except KeyboardInterrupt:
        remove_debris(unit_dir)
        why = "interrupted; `rlcrate run --resume` continues from the last checkpoint"
        write_status(unit_dir, "interrupted", **together(fields, ended(wall()), {"error": why}))
        return 130
    except Exception as exc:  # a unit's failure is recorded, never raised into the run
        record_failure(unit_dir, exc, together(fields, ended(wall())))
        return 1
    write_status(unit_dir, "done", **together(fields, ended(wall())))
    return 0


def ended(wall_time_s: float) -> StatusFields:
    """A segment's end: now, and every segment's wall time."""
    return {"finished": time.time(), "wall_time_s": wall_time_s}


def main(argv: list[str]) -> int:
    from runner.run.plainlog import plain_output

    plain_output()
    signal.signal(signal.SIGTERM, _sigterm)
    # Slurm sends submitit's time-limit signal to every process of the job: the job's own Python
    # asks the unit to stop (SIGTERM). The job starts units with it ignored, but not always
    # straight: Apptainer's runtime between them (a .sif) hands the unit the default, which ends it.
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    run_dir, variant, seed, jobs = Path(argv[0]), argv[1], int(argv[2]), argv[3].split(",")
    if read_status(UnitRef(variant, seed).dir(run_dir)).state == "done" and "train" in jobs:
        return 0
    return run_unit(run_dir, variant, seed, jobs)


if __name__ == "__main__":
    quick_exit.end(main(sys.argv[1:]))
