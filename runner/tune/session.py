"""A study's session: the run it continues (checked), its study opened from the journal, and
tune.json's record, carried through the loop (`loop`) as one `Study`."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import RunFileError, UserInputError
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
    """The study opened from its journal (repaired or refused: `journal.repair`), its records
    checked against each other (`agree`), its sampler replayed to where it was (`replay`)."""
    import optuna

    from runner.tune import journal, replay
    from runner.tune import study as optuna_side

    for note in journal.repair(run_dir / records.STUDY_FILE):
        print(f"warning: {note}", file=sys.stderr, flush=True)
    old = records.read_tune(run_dir)
    seed = manifest.seeds[0]
    drawn = journal.trials(run_dir / records.STUDY_FILE, manifest.name)
    _check_records(run_dir, res, spec, old, drawn)  # before anything is written to the journal
    pruned_by = optuna_side.pruner(spec, manifest.eval.every, manifest.train.timesteps)
    study = optuna_side.open_study(run_dir, manifest.name, spec, seed, pruned_by)
    study.sampler, why = replay.replayed(spec, seed, manifest, drawn)
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
    if why is not None:
        record.study.sampler_seed = seed + len(drawn)
        record.study.replays = (
            f"not exact: resumed with a sampler seeded past the {len(drawn)} trial(s) drawn, "
            f"because the journal does not replay from seed {seed} ({why})"
        )
        print(f"warning: {record.study.replays}", file=sys.stderr, flush=True)
    return Study(run_dir, res, manifest, spec, study, record, run_opts)


def _check_records(
    run_dir: Path, res: ResolvedRun, spec: TuneSpec, old: TuneRecord | None, drawn: list[Any]
) -> None:
    """tune.json, the journal, resolved.yaml and the units agree (`agree`), or one line naming
    the file that does not (RunFileError): never a trial relabelled with new values."""
    from runner.tune import agree
    from runner.tune import study as optuna_side

    def values_of(trial: Any) -> dict[str, Any] | None:
        if isinstance(spec.space, str) or set(trial.params) != set(spec.dims()):
            return None  # a named space's params are its sampler's own
        return optuna_side.values(spec, trial.params)

    doing = "nothing was run; restore it from a copy, or start the study again"
    found = agree.journal_disagrees(old, drawn, values_of)
    if found is not None:
        raise RunFileError(agree.refused(str(run_dir / found[0]), found[1], doing))
    units = run_dir / "units"
    variants = [p.name for p in units.iterdir() if p.is_dir()] if units.is_dir() else []
    unlisted = agree.unlisted_units(old, variants)
    if unlisted:
        why = f"units/{unlisted[0]} holds a trial's units that it does not list"
        raise RunFileError(agree.refused(str(run_dir / records.TUNE_FILE), why, doing))
    if old is not None:
        metric_of = agree.run_metric(run_dir, old.study.metric)
        why_not = agree.record_disagrees(old, res, metric_of)
        if why_not is not None:
            raise RunFileError(agree.refused(str(run_dir / records.TUNE_FILE), why_not, doing))
