"""A study's session: the run it continues (checked), its study opened from the journal, and
tune.json's record, carried through the loop (`loop`) as one `Study`."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import UserInputError
from runner.manifest import Manifest, ResolvedRun, resolved
from runner.manifest.resolved import read_resolved
from runner.manifest.tune import TuneSpec
from runner.record import started
from runner.record import tune as records
from runner.record.tune import StudyRecord, TuneRecord
from runner.run.orchestrate import RunOptions


@dataclass
class Study:
    """What the loop carries: the run, its manifest and study, and tune.json's record."""

    run_dir: Path
    res: ResolvedRun
    manifest: Manifest
    spec: TuneSpec
    study: Any  # optuna.Study
    record: TuneRecord
    run_opts: RunOptions


def resumed_run(run_dir: Path, manifest: Manifest) -> tuple[Path, ResolvedRun]:
    """The run to continue, checked: a study's run, made from this manifest."""
    if not (run_dir / records.STUDY_FILE).is_file():
        raise UserInputError(f"--resume {run_dir}: not a study's run (no {records.STUDY_FILE})")
    res = read_resolved(run_dir)
    unchecked = started.check(run_dir)
    if unchecked:
        print(f"warning: {unchecked}", file=sys.stderr, flush=True)

    def shape(r: ResolvedRun) -> ResolvedRun:
        return r.without_interpreters().model_copy(update={"variants": {}, "sources": {}})

    if shape(res) != shape(resolved(manifest)):
        raise UserInputError(
            f"--resume {run_dir}: the manifest resolves differently from the one that study was "
            "started with; resume with the run's own manifest.yaml"
        )
    return run_dir, res


def replays(spec: TuneSpec) -> str:
    """Whether the study, run again from its manifest, asks for the same trials (tune.json)."""
    how = (
        "exact: a seeded sampler; trials are asked tune.parallel at a time and told in their "
        "order once all of them have ended, whatever order their units end in"
    )
    if spec.pruner.name == "none":
        return how
    return (
        f"{how}; the pruner's decisions too (each is taken once every seed has reported the "
        "step), but a pruned unit stops at its next check (about once a second), so the steps "
        "it trained after the decision can differ"
    )


def open_session(
    run_dir: Path, res: ResolvedRun, manifest: Manifest, spec: TuneSpec, run_opts: RunOptions
) -> Study:
    import optuna

    from runner.tune import study as optuna_side

    old = records.read_tune(run_dir)
    told = len(old.trials) if old is not None else 0
    # a resumed session seeds its sampler past the trials already drawn, so that it does not
    # draw the first session's values again
    seed = manifest.seeds[0] + told
    pruned_by = optuna_side.pruner(spec, manifest.eval.every, manifest.train.timesteps)
    study = optuna_side.open_study(run_dir, manifest.name, spec, seed, pruned_by)
    trials = spec.trials if spec.sampler != "grid" else min(spec.trials, spec.grid_size())
    record = old or TuneRecord(
        name=manifest.name,
        run_id=run_dir.name,
        seeds=list(res.seeds),
        study=StudyRecord(
            metric=spec.objective.metric,
            stat=spec.objective.stat,
            direction=spec.objective.direction,
            sampler=spec.sampler,
            sampler_seed=seed,
            pruner=spec.pruner.name,
            replays=replays(spec),
            optuna_version=optuna.__version__,
            storage=records.STUDY_FILE,
            trials=trials,
            parallel=spec.parallel,
        ),
    )
    record.study.sampler_seed = seed
    return Study(run_dir, res, manifest, spec, study, record, run_opts)
