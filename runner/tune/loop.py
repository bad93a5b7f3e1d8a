"""`rlcrate tune MANIFEST`: the study's loop in one run directory.

Each trial is a variant (`trial-000` ...) of the manifest with the trial's values set at their
dotted paths, run on every seed of the manifest (paired) as units through the manifest's
executor, by the orchestrator's own `run_units`. `tune.parallel` trials are asked of the study
at a time (Optuna's ask/tell), their units launched together, each told its objective when they
end; resolved.yaml gains each trial's variant before its units start, so a unit reads its config
as in any run. tune.json is rewritten after every trial; `--resume` reruns the trials the study
holds as running (cut mid-way: their units resume as any run's do) and asks for the rest.
"""

from __future__ import annotations

import contextlib
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from runner.backends import unit_interpreter
from runner.checks.load import load_manifest
from runner.errors import UnitFailed, UserInputError
from runner.executors import Chosen
from runner.manifest import Manifest, ResolvedVariant, apply_overrides
from runner.manifest.matrix import override_modes
from runner.manifest.resolved import write_resolved
from runner.manifest.tune import TuneSpec
from runner.record import started
from runner.record import tune as records
from runner.record.lock import locked
from runner.record.provenance import update_provenance
from runner.record.tune import TrialRecord
from runner.run.orchestrate import (
    RunOptions,
    as_interrupt,
    check_installed,
    preflight,
    prepare_run_dir,
    run_units,
)
from runner.trainers import search_spaces
from runner.tune.session import Study, open_session, resumed_run


@dataclass
class TuneOptions:
    executor: Chosen
    out: Path = Path("runs")
    resume: Path | None = None
    overrides: list[Any] = field(default_factory=list)  # --set, --seeds (manifest.overrides)


def variant_name(number: int) -> str:
    return f"trial-{number:03d}"


def tune(manifest_path: Path, opts: TuneOptions, console: Console) -> Path:
    """Run the study; returns the run directory (UnitFailed when no trial completed)."""
    if opts.resume is not None and not opts.overrides:  # the run's own --set and --seeds
        from runner.manifest.overrides import of_run

        opts.overrides = of_run(opts.resume)
    manifest = load_manifest(manifest_path, overrides=opts.overrides)
    spec = _can_run(manifest_path, manifest, opts)
    run_opts = RunOptions(
        ["train", "eval"], opts.executor, opts.out, opts.resume, overrides=opts.overrides
    )
    signal.signal(signal.SIGTERM, as_interrupt)  # SIGTERM stops as cleanly as Ctrl-C
    with locked(opts.resume) if opts.resume is not None else contextlib.nullcontext():
        resumed = resumed_run(opts.resume, manifest) if opts.resume is not None else None
        preflight(manifest_path, manifest, run_opts, console)  # the base manifest built once
        run_dir, res = resumed or prepare_run_dir(manifest_path, manifest, run_opts)
        with locked(run_dir):
            state = open_session(run_dir, res, manifest, spec, run_opts)
            console.print(f"run directory: [bold]{escape(str(run_dir))}[/]")
            if manifest.image != "local":  # `run` hands such a manifest to the image; not yet
                console.print(
                    f"[yellow]warning: image: {escape(manifest.image)}: rlcrate tune runs the "
                    "study's units with this Python, not in the image[/]",
                    soft_wrap=True,
                )
            return _run_study(state, console)


def _can_run(manifest_path: Path, manifest: Manifest, opts: TuneOptions) -> TuneSpec:
    """The study's section, once nothing refuses it (UserInputError, BackendUnavailable):
    checked before any run directory is made."""
    from runner.tune import study as optuna_side

    spec = manifest.tune
    if spec is None:
        raise UserInputError(
            f"{manifest_path}: has no tune: section; `rlcrate tune` runs an Optuna study over "
            "tune.space (docs/guides/tuning.md)"
        )
    optuna_side.quiet()
    optuna_side.sampler(spec, manifest.seeds[0])  # a sampler that cannot run here
    if opts.executor.settings.detached:
        raise UserInputError(
            f"--executor {opts.executor.name}: as set, it returns once the units are submitted; "
            "a study waits on each trial's units to choose the next values"
        )
    if spec.pruner.name != "none" and not opts.executor.executor.live_files:
        raise UserInputError(
            f"tune.pruner: {spec.pruner.name} reads each unit's evaluations while it trains, "
            f"and the {opts.executor.name} executor brings a unit's files back when it ends; "
            "use pruner: none with it, or another executor"
        )
    check_installed(manifest)
    opts.executor.check_reachable()
    return spec


def _trial_variant(s: Study, params: dict[str, Any]) -> ResolvedVariant:
    """The variant a trial runs (ValueError, ValidationError when its values make no manifest)."""
    config = apply_overrides(s.manifest, params)
    base = next(iter(s.res.variants.values()), None)
    return ResolvedVariant.model_validate(
        {
            "overrides": params,
            "override_modes": override_modes(s.manifest, params),
            "config": config,
            "interpreter": unit_interpreter(config.env.backend),
            "parent": base.parent if base is not None else None,
        }
    )


def _write_resolved(s: Study, variants: dict[str, ResolvedVariant]) -> None:
    """resolved.yaml with the trials' variants (a new run's placeholder `default` dropped), and
    the record of what the run started with updated to it (checked by every --resume)."""
    kept = {k: v for k, v in s.res.variants.items() if k.startswith("trial-")}
    s.res.variants = kept | variants
    write_resolved(s.run_dir, s.res)
    update_provenance(s.run_dir, **{started.KEY: started.fingerprint(s.run_dir)})


def _next_batch(s: Study, rerun: list[Any]) -> list[tuple[int, dict[str, Any]]]:
    """(number, values) of the next trials to run: those cut mid-way first (a batch of their
    own, as the session they were asked in ran them: the sampler then draws the rest as an
    uninterrupted study would), then new ones."""
    from runner.tune import study as optuna_side

    if rerun:
        cut = [(t.number, _values_of(s, t)) for t in rerun[: s.spec.parallel]]
        del rerun[: len(cut)]
        return cut
    batch: list[tuple[int, dict[str, Any]]] = []
    dists = optuna_side.distributions(s.spec)
    while len(batch) < s.spec.parallel and len(s.study.trials) < s.record.study.trials:
        if isinstance(s.spec.space, str):  # a named space: the trainer's sampler asks
            trial = s.study.ask()
            values = search_spaces(s.manifest).sample_space(s.manifest, s.spec.space, trial)
        else:
            trial = s.study.ask(fixed_distributions=dists)
            values = optuna_side.values(s.spec, trial.params)
        batch.append((trial.number, values))
    return batch


def _values_of(s: Study, trial: Any) -> dict[str, Any]:
    """A trial cut mid-way: the values it ran with (tune.json's; a named space's Optuna params
    are its sampler's own, not manifest values)."""
    import optuna

    from runner.tune import study as optuna_side

    record = s.record.trial(trial.number)
    if record is not None:  # what its units were started with (agree: the journal's too)
        return dict(record.params)
    # asked, and the runner stopped before tune.json listed it: no unit ran it
    if isinstance(s.spec.space, str):
        return search_spaces(s.manifest).sample_space(
            s.manifest, s.spec.space, optuna.trial.FixedTrial(trial.params, trial.number)
        )
    return optuna_side.values(s.spec, trial.params)


def _run_study(s: Study, console: Console) -> Path:
    import optuna

    from runner.tune import judge

    _catch_up(s)
    rerun = s.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for t in [t for t in rerun if _never_drawn(s, t)]:
        rerun.remove(t)  # asked, and the runner stopped before Optuna gave it every value
        judge.fail(s, TrialRecord(number=t.number, variant=variant_name(t.number), params={}),
                   "the runner was stopped while the study drew its values")  # fmt: skip
    for t in rerun:
        console.print(f"{variant_name(t.number)}: cut mid-way before; it runs again")
    while True:
        asked = time.perf_counter()
        batch = _next_batch(s, rerun)
        if not batch:
            break
        try:
            _run_batch(s, batch, asked, console)
        except KeyboardInterrupt:
            records.write_tune(s.run_dir, s.record)
            _stopped(s, console)
            raise
    return _finish(s, console)


def _never_drawn(s: Study, trial: Any) -> bool:
    """A trial no unit ran (tune.json does not list it) whose values the journal lacks."""
    dims = s.spec.dims()
    return s.record.trial(trial.number) is None and bool(dims) and set(trial.params) != set(dims)


def _catch_up(s: Study) -> None:
    """A trial told to the study whose tune.json entry was not rewritten (the runner stopped in
    between) is judged again from its units' files; the study keeps what it was told."""
    import optuna

    from runner.tune import judge

    ended = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    told = {t.number for t in s.study.get_trials(deepcopy=False, states=ended)}
    for trial in s.record.trials:
        variant = s.res.variants.get(trial.variant)
        if trial.state == "running" and trial.number in told and variant is not None:
            judge.judge(s, trial, variant)
    records.write_tune(s.run_dir, s.record)


def _run_batch(
    s: Study, batch: list[tuple[int, dict[str, Any]]], asked: float, console: Console
) -> None:
    """Run the batch's trials' units together and judge each; `asked`: perf_counter() before
    the batch was asked of the study."""
    from runner.tune import judge
    from runner.tune.prune import Watch

    variants: dict[str, ResolvedVariant] = {}
    for number, params in batch:
        name = variant_name(number)
        trial = TrialRecord(number=number, variant=name, params=params)
        s.record.trials = [t for t in s.record.trials if t.number != number] + [trial]
        try:
            variants[name] = _trial_variant(s, params)
        except (ValueError, ValidationError) as exc:  # values that make no valid manifest
            judge.fail(s, trial, f"its values make no valid manifest: {_first_line(exc)}")
            console.print(f"[yellow]{name}: failed: {escape(trial.error or '')}[/]")
    if not variants:
        records.write_tune(s.run_dir, s.record)
        return
    _write_resolved(s, variants)
    records.write_tune(s.run_dir, s.record)
    sub = s.res.model_copy(update={"variants": variants})
    trials = [next(t for t in s.record.trials if t.variant == name) for name in variants]
    before = time.perf_counter() - asked  # asking, resolved.yaml, tune.json: shared by the batch
    started_at = time.time()
    with Watch(s, trials):  # the pruner, fed while the units train
        run_units(s.run_dir, sub, s.manifest, s.run_opts, console)
    ended = time.time()
    for trial in trials:
        t0 = time.perf_counter()
        trial.wall_time_s = round(ended - started_at, 3)
        judge.judge(s, trial, variants[trial.variant])
        console.print(escape(judge.line(s, trial)), soft_wrap=True, highlight=False)
        records.write_tune(s.run_dir, s.record)
        trial.bookkeeping_s = round(before / len(trials) + time.perf_counter() - t0, 4)
    records.write_tune(s.run_dir, s.record)


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg'].removeprefix('Value error, ')}"
    return str(exc).splitlines()[0]


def _stopped(s: Study, console: Console) -> None:
    command = f"rlcrate tune {s.run_dir / 'manifest.yaml'} --resume {s.run_dir}"
    console.print("[yellow]stopped; resume with:[/]")
    console.print(escape(command), soft_wrap=True, highlight=False)


def _finish(s: Study, console: Console) -> Path:
    from runner.report.summary import write_summary
    from runner.tune import judge

    records.write_tune(s.run_dir, s.record)
    if s.res.variants and all(k.startswith("trial-") for k in s.res.variants):
        write_summary(s.run_dir, s.res)
    best = judge.best(s)
    if best is None:
        raise UnitFailed(
            f"no trial of the study completed; see {s.run_dir / records.TUNE_FILE} and the "
            "units' status.json and unit.log"
        )
    path = judge.write_best(s, best)
    from runner.tune.plots import write_plots

    for line in write_plots(s.run_dir, s.study, s.spec):
        console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)
    done = sum(t.state == "complete" for t in s.record.trials)
    console.print(
        f"study: {done} of {len(s.record.trials)} trials complete; best {best.variant}: "
        f"{judge.how(s)} = {best.objective:.6g}",
        soft_wrap=True,
    )
    console.print(f"best: {escape(str(path))}", soft_wrap=True)
    from runner.report import write_report

    console.print(f"report: {write_report(s.run_dir)}", soft_wrap=True)
    return s.run_dir
