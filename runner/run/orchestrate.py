"""`rlcrate run`: manifest -> run directory -> units via an executor -> summary, bench, report."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape

from runner import provenance
from runner.backends import unit_interpreter
from runner.checks import lineage
from runner.checks.load import load_manifest
from runner.errors import BackendUnavailable, RunnerError, UnitFailed, UserInputError
from runner.executors import Chosen, Plan, choose
from runner.manifest import Manifest, ResolvedRun, read_resolved, resolved
from runner.manifest.resolved import RESOLVED, write_resolved
from runner.record import started
from runner.record.lock import locked
from runner.record.provenance import Provenance, update_provenance, write_provenance
from runner.record.rundir import (
    UnitRef,
    new_run_dir,
)
from runner.record.status import read_status, write_status
from runner.run.finish import (
    NO_SPACE,
    anything_started,
    damaged_results,
    recover_done,
    recover_stale,
    remove_unused,
    settle,
    unreadable_status,
)
from runner.run.status import resume_hint

JOBS = ("train", "eval", "bench")


@dataclass
class RunOptions:
    jobs: list[str] | None  # None: the jobs the manifest declares (manifest_jobs)
    executor: Chosen = field(default_factory=choose)
    out: Path = Path("runs")
    resume: Path | None = None
    report: bool = True
    overrides: list[Any] = field(default_factory=list)  # --set, --seeds (manifest.overrides)
    # the image the executor runs each unit in (Slurm: a .sif), when not the runner's own
    image: dict[str, str | None] | None = None


def parse_jobs(text: str) -> list[str]:
    jobs = [j.strip() for j in text.split(",") if j.strip()]
    bad = [j for j in jobs if j not in JOBS]
    if bad or not jobs:
        raise UserInputError(
            f"--jobs: expected a comma-separated subset of {', '.join(JOBS)}, got {text!r}"
        )
    return jobs


def manifest_jobs(manifest: Manifest) -> list[str]:
    """What `rlcrate run` does without `--jobs`: train and eval every unit, and bench when the
    manifest has a `bench:` section of its own (not just the defaults)."""
    return ["train", "eval", *(["bench"] if "bench" in manifest.model_fields_set else [])]


def _trainers(res: ResolvedRun) -> dict[str, set[str]]:
    """backend -> the trainers its units train with (for the resume checks provenance copies)."""
    from runner.trainers import trainer_name

    out: dict[str, set[str]] = {}
    for v in res.variants.values():
        out.setdefault(v.config.env.backend, set()).add(trainer_name(v.config))
    return out


def prepare_run_dir(
    manifest_path: Path, manifest: Manifest, opts: RunOptions
) -> tuple[Path, ResolvedRun]:
    """A new run directory with manifest, resolved manifest and provenance; or the resumed one."""
    if opts.resume is not None:
        run_dir = opts.resume
        if not (run_dir / RESOLVED).is_file():
            raise UserInputError(f"--resume {run_dir}: not a run directory (no {RESOLVED})")
        res = read_resolved(run_dir)
        unchecked = started.check(run_dir)  # its files are the ones it was made with
        if unchecked:
            print(f"warning: {unchecked}", file=sys.stderr, flush=True)
        # a resumed run keeps the interpreters and command line it recorded (--set and --seeds
        # are applied to both sides)
        if not res.same_run(resolved(manifest)):
            raise UserInputError(
                f"--resume {run_dir}: {manifest_path} resolves differently from the manifest that "
                "run was started with; resume with the run's own manifest.yaml"
            )
        check_resumed_files(run_dir, res)
        return run_dir, res
    from runner.manifest.overrides import record

    res = lineage.pin_all(resolved(manifest))  # a warm start's parent: found, hashed
    res.command_line = record(opts.overrides, sys.argv)
    for variant in res.variants.values():  # null: the runner's own Python
        variant.interpreter = unit_interpreter(variant.config.env.backend)
    try:
        run_dir = new_run_dir(opts.out, manifest.name)
    except (ValueError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno in NO_SPACE:
            raise  # the machine's fault, not the user's: exit 1 with the cause
        raise UserInputError(f"--out {opts.out}: cannot create the run directory ({exc})") from None
    try:
        shutil.copyfile(manifest_path, run_dir / "manifest.yaml")
        write_resolved(run_dir, res)
        prov = provenance.collect(
            sys.argv, manifest_path, res.backends(), res.pythons(), _trainers(res)
        )
        prov["command_line"] = res.command_line
        prov["executor"] = opts.executor.record()
        if opts.image is not None:
            prov["image"] = opts.image
        prov["lineage"] = {n: v.parent.model_dump() for n, v in res.variants.items() if v.parent}
        prov[started.KEY] = started.fingerprint(run_dir)  # checked by every --resume
        write_provenance(run_dir, Provenance.model_validate(prov))
    except BaseException:  # a full disk, a signal: no half-made run directory stays behind
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return run_dir, res


def check_resumed_files(run_dir: Path, res: ResolvedRun) -> None:
    """Before anything of a resumed run is opened (the dry construction loads a warm start's
    parent): its parents' files are the ones pinned when it started, and no unit holds a pickle
    (an older rlcrate's statistics or parameters, which could run code when read). One line,
    exit 2, otherwise. (A unit's own model files are checked against its train.json by the
    unit, before it reads them: a changed one is trained again, or fails an eval-only job.)"""
    from runner.record.datafiles import LegacyPickle

    for unit in res.units():
        parent = res.variants[unit.variant].parent
        if parent is not None:
            lineage.verify(parent, unit.seed)
        unit_dir = unit.dir(run_dir)
        for old in sorted(unit_dir.rglob("*.pkl")) if unit_dir.is_dir() else []:
            raise LegacyPickle(old, "a file")


def parallelism(manifest: Manifest, res: ResolvedRun) -> tuple[int, int]:
    """(units at once, CPUs each unit needs): sized for the hungriest variant."""
    from runner.executors.needs import cpus_of

    per_unit = max(cpus_of(v.config) for v in res.variants.values())
    cpus = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
    auto = max(1, cpus // per_unit)
    return (manifest.parallel.units or auto), per_unit


def _finish_provenance(run_dir: Path, units: list[UnitRef]) -> None:
    import time

    units_ran = {
        u.key: {
            "state": (s := read_status(u.dir(run_dir))).state,
            "seeds": s.seeds,
            "python": s.python,
        }
        for u in units
    }
    update_provenance(run_dir, finished=time.time(), units=units_ran)  # damaged: kept as it is


def run_units(
    run_dir: Path, res: ResolvedRun, manifest: Manifest, opts: RunOptions, console: Console
) -> dict[UnitRef, int]:
    from runner.executors.needs import unit_needs
    from runner.run.progress import ProgressView

    # "video": `rlcrate eval --video`, the eval job recording eval.video (its defaults if unset)
    unit_jobs = [j for j in opts.jobs or [] if j in ("train", "eval", "video")]
    if not unit_jobs:
        return {}
    units = res.units()
    configs = {name: v.config for name, v in res.variants.items()}
    for key in recover_done(run_dir, units, unit_jobs, configs):
        console.print(
            f"[yellow]{escape(key)}: status.json was unreadable; its model and eval result are "
            "whole, so it is done (recovered from them, nothing run again)[/]",
            soft_wrap=True,
        )
    bad = [(p, "missing or unreadable") for p in unreadable_status(run_dir, units)]
    for path, why in bad + damaged_results(run_dir, units, unit_jobs, configs):
        console.print(
            f"[yellow]{escape(str(path))}: {escape(why)}; that unit runs again[/]", soft_wrap=True
        )
    todo = [u for u in units if read_status(u.dir(run_dir)).state != "done"]
    for u in todo:
        if not (u.dir(run_dir) / "status.json").exists():
            write_status(u.dir(run_dir), "pending", variant=u.variant, seed=u.seed)
    if not todo:
        return {}
    at_once, _ = parallelism(manifest, res)
    steps = {u: res.variants[u.variant].config.train.timesteps for u in units}
    view = ProgressView(run_dir, units, steps)
    results: dict[UnitRef, Any] = {}
    stopping = True
    from runner.report import prewarm

    if not opts.executor.settings.detached:  # a detached run ends once its units are submitted
        prewarm.start(prewarm.modules(opts.report, len(res.seeds)))  # while the units run
    with Live(view, console=console, auto_refresh=False, transient=True) as live:
        try:
            plan = Plan(run_dir, todo, unit_jobs, res.pythons(), unit_needs(res, todo), at_once)
            results = opts.executor.launch(plan, live.refresh)
            stopping = False
            return results
        except KeyboardInterrupt:  # what the executor still holds of the unfinished units stops
            opts.executor.cancel(
                run_dir, [u for u in todo if not read_status(u.dir(run_dir)).ended]
            )
            raise
        finally:
            settle(run_dir, todo, results, stopping)
            _finish_provenance(run_dir, units)


def run(manifest_path: Path, opts: RunOptions, console: Console) -> Path:
    """Run the manifest; returns the run directory. Raises UnitFailed if any unit failed.

    The run directory is locked while this runner uses it (a second `--resume` is refused).
    """
    if opts.resume is not None and not opts.overrides:  # the run's own --set and --seeds
        from runner.manifest.overrides import of_run

        opts.overrides = of_run(opts.resume)
    manifest = load_manifest(manifest_path, overrides=opts.overrides)
    if opts.jobs is None:
        opts.jobs = manifest_jobs(manifest)
    check_installed(manifest)
    opts.executor.check_reachable()  # before any directory or env is made
    signal.signal(signal.SIGTERM, as_interrupt)  # SIGTERM stops as cleanly as Ctrl-C
    with locked(opts.resume) if opts.resume is not None else contextlib.nullcontext():
        resumed = prepare_run_dir(manifest_path, manifest, opts) if opts.resume else None
        preflight(manifest_path, manifest, opts, console)  # a resume checked first
        run_dir, res = resumed or prepare_run_dir(manifest_path, manifest, opts)
        try:
            with locked(run_dir):
                return _run_locked(run_dir, res, manifest, opts, console)
        except RunnerError:  # a unit that failed ran: its run is kept (below)
            started_any = opts.executor.executor.started_any(run_dir)
            if resumed is None and not started_any and not anything_started(run_dir, res):
                remove_unused(run_dir, opts.out)  # a refusal leaves no run behind
            raise


def preflight(manifest_path: Path, manifest: Manifest, opts: RunOptions, console: Console) -> None:
    """Before any unit: warn about what the machine cannot give, then build every variant's env
    and model once (ManifestError, one line per variant, if one cannot be built). On a cluster
    (Ray, Slurm) the device is not checked here, where the units do not run. A bench-only run
    runs no unit: the units' warnings would be about variants it never runs."""
    from runner.checks.dry import build_all
    from runner.run import resources

    res = resolved(manifest)
    units_run = any(j in (opts.jobs or []) for j in ("train", "eval"))
    for line in resources.warnings(res, parallelism(manifest, res)[0]) if units_run else []:
        console.print(f"[yellow]warning: {escape(line)}[/]")
    checked = opts.executor.executor.runs_here
    built = build_all(
        manifest_path, res, check_device=checked, overrides=opts.overrides, remembered=True
    )
    for line in built:
        console.print(f"[yellow]warning: {escape(line)}[/]", soft_wrap=True)  # one line


def _run_locked(
    run_dir: Path, res: ResolvedRun, manifest: Manifest, opts: RunOptions, console: Console
) -> Path:
    from runner.report.summary import write_summary
    from runner.run.progress import print_failures, summary_table

    console.print(f"run directory: [bold]{escape(str(run_dir))}[/]")
    units = res.units()
    for key in recover_stale(run_dir, units):
        console.print(f"[yellow]{escape(key)}: left running by a runner that stopped[/]")
    try:
        results = run_units(run_dir, res, manifest, opts, console)
    except KeyboardInterrupt:
        write_summary(run_dir, res)
        resume_hint(console, run_dir)
        raise
    if opts.executor.settings.detached:
        console.print(f"submitted; follow with: rlcrate status {escape(str(run_dir))}")
        return run_dir
    jobs = opts.jobs or []
    units_ran = any(j in jobs for j in ("train", "eval"))
    # the summary as soon as the last unit is evaluated; uploads, the bench and plots after it
    summary = write_summary(run_dir, res) if units_ran else None
    if summary is not None:  # a bench-only run has no per-seed results to summarise
        console.print(summary_table(summary))
        print_failures(console, summary)
    if units_ran:
        track(run_dir, res, console)
    if "bench" in jobs:
        from runner.run.bench.run import run_bench

        run_bench(manifest, run_dir, console=console)
    if opts.report:
        _report(run_dir, console)
    failed = [u for u, rc in results.items() if rc != 0]
    if failed:
        raise UnitFailed(
            f"{len(failed)} of {len(results)} units failed; see their status.json and unit.log"
        )
    return run_dir


def track(run_dir: Path, res: ResolvedRun, console: Console) -> None:
    """Upload the units to the manifest's trackers (a warning, never a failure, when one cannot
    be reached)."""
    from runner.track import track_run, track_section, wanted

    if not wanted(track_section(res)):
        return

    def warn(line: str) -> None:
        console.print(f"[yellow]warning: {escape(line)}[/]", soft_wrap=True)

    try:
        done = track_run(run_dir, res, warn)
    except KeyboardInterrupt:  # what was uploaded is recorded; the rest goes up later
        console.print(f"[yellow]tracking stopped; finish it with: rlcrate track {run_dir}[/]")
        raise
    for name, n in done.items():
        if n:
            console.print(f"tracked: {n} unit(s) in {name}")


def check_installed(manifest: Manifest) -> None:
    """Refuse before creating a run directory when this environment cannot run the units."""
    from runner.checks.installed import local_run_problem
    from runner.manifest import expand

    problem = local_run_problem({v.config.env.backend for v in expand(manifest) if v.config})
    if problem:
        raise BackendUnavailable(problem)
    from runner.track import check_installed

    check_installed(manifest.model_dump(mode="json").get("track"))


def as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _report(run_dir: Path, console: Console) -> None:
    from runner.report import write_report

    path = write_report(run_dir)
    console.print(f"report: {path}")
