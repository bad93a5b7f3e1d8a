"""The `rlcrate` command line. Commands are thin; the one place errors become exit codes is `main`.

Exit status: 0 success, 1 a unit failed (or `reproduce` found a difference), 2 bad input
(manifest, arguments, a refused archive), 3 `expect:` claims not met, 130 interrupted.
Heavy modules are imported inside the commands so `rlcrate --help` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from runner import __version__
from runner.cli import cluster as cc
from runner.cli.exit import Group, click, exit_status
from runner.cli.run import (
    ImageOpt,
    ManifestArg,
    NumSeedsOpt,
    OutOpt,
    ResumeOpt,
    RunDirArg,
    SeedsOpt,
    SetOpt,
    console,
    executor_options,
    overrides_of,
    run_manifest,
)
from runner.errors import BackendUnavailable, RunnerError, UserInputError
from runner.executors import Chosen, choose

app = typer.Typer(
    name="rlcrate",
    cls=Group,
    help="Reproducible RL experiments: run a manifest locally, in an image or on Ray.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rlcrate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Reproducible RL experiments: run a manifest locally, in an image or on Ray."""


@app.command("run")
@executor_options
def run_cmd(
    manifest: ManifestArg,
    jobs: Annotated[
        str | None,
        typer.Option(
            "--jobs",
            "-j",
            help="Comma-separated: train,eval,bench. Default: train,eval, plus bench when the "
            "manifest has a `bench:` section.",
        ),
    ] = None,
    image: ImageOpt = None,
    out: OutOpt = Path("runs"),
    resume: ResumeOpt = None,
    expect: Annotated[
        bool,
        typer.Option(
            "--expect/--no-expect",
            help="Exit with status 3 when an expect: claim does not hold (--no-expect: report "
            "only).",
        ),
    ] = True,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report",
            help="Write report.md and the plots once the summary is printed (--no-report: the "
            "summary alone, a second or two sooner; `rlcrate report RUN_DIR` writes them later).",
        ),
    ] = True,
    sets: SetOpt = None,
    seeds: SeedsOpt = None,
    num_seeds: NumSeedsOpt = None,
    *,
    executor: Chosen,
) -> None:
    """Run the manifest's jobs for every (variant, seed) unit; print progress and a summary.

    The units run where the manifest's `image:` says (local by default); `--image` overrides it:
    `--image local` runs here, `--image cpu|cuda|TAG` inside that image.
    """
    overrides = overrides_of(sets, seeds, num_seeds)
    run_manifest(manifest, jobs, executor, image, out, resume, expect, overrides, report)


@app.command("status")
def status_cmd(run_dir: RunDirArg) -> None:
    """Where a run stands (units, their Slurm jobs); the summary once every unit has ended."""
    raise typer.Exit(cc.status(run_dir))


@app.command("train")
@executor_options
def train_cmd(
    manifest: ManifestArg,
    image: ImageOpt = None,
    out: OutOpt = Path("runs"),
    resume: ResumeOpt = None,
    sets: SetOpt = None,
    seeds: SeedsOpt = None,
    num_seeds: NumSeedsOpt = None,
    *,
    executor: Chosen,
) -> None:
    """Train every unit (no evaluation)."""
    overrides = overrides_of(sets, seeds, num_seeds)
    run_manifest(manifest, "train", executor, image, out, resume, overrides=overrides)


@app.command("eval")
@executor_options
def eval_cmd(
    manifest: ManifestArg,
    resume: Annotated[
        Path,
        typer.Option(
            "--resume",
            help="The run directory whose trained models to evaluate.",
            exists=True,
            file_okay=False,
        ),
    ],
    sets: SetOpt = None,
    *,
    executor: Chosen,
) -> None:
    """Evaluate the trained models of a run directory with the manifest's eval protocol.

    The run's own --set and --seeds apply; give --set again only to repeat them."""
    from runner.manifest import read_resolved
    from runner.record import started
    from runner.record.lock import locked
    from runner.record.status import read_status, write_status
    from runner.run.orchestrate import RunOptions, run

    with locked(resume):
        units = read_resolved(resume).units()
        started.check(resume)  # before any unit is marked to evaluate again
        for unit in units:
            d = unit.dir(resume)
            if read_status(d).state == "done":
                write_status(d, "pending")  # evaluate again
        opts = RunOptions(
            ["eval"], executor, Path("runs"), resume, overrides=overrides_of(sets, None)
        )
        run(manifest, opts, console())


@app.command("bench")
def bench_cmd(
    manifest: ManifestArg,
    image: ImageOpt = None,
    out: OutOpt = Path("runs"),
    sets: SetOpt = None,
    seeds: SeedsOpt = None,
    num_seeds: NumSeedsOpt = None,
) -> None:
    """Benchmark env-only and training steps/s over the manifest's bench.sweep."""
    overrides = overrides_of(sets, seeds, num_seeds)
    run_manifest(manifest, "bench", choose(), image, out, None, overrides=overrides)  # no cluster


@app.command("validate")
def validate_cmd(
    manifest: ManifestArg,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also build each variant's env and model once on this machine, as `run` does "
            "before any unit starts (no training).",
        ),
    ] = False,
    show: Annotated[
        bool,
        typer.Option(
            "--show",
            help="Also print the resolved algorithm block, each value with its source "
            "(manifest, rlcrate default, or the rl-zoo3 file and entry).",
        ),
    ] = False,
    sets: SetOpt = None,
    seeds: SeedsOpt = None,
    num_seeds: NumSeedsOpt = None,
) -> None:
    """Check a manifest; every problem names the file, line and field (or the --set that
    caused it)."""
    from runner.checks.installed import not_checked_here
    from runner.checks.load import load_manifest
    from runner.checks.show import deep_note, show_lines
    from runner.manifest import expand, resolved
    from runner.run import resources
    from runner.run.orchestrate import parallelism

    overrides = overrides_of(sets, seeds, num_seeds)
    m = load_manifest(manifest, overrides=overrides)
    res = resolved(m)
    for line in resources.warnings(res, parallelism(m, res)[0]):
        typer.echo(f"warning: {line}", err=True)
    if deep:
        from runner.checks.dry import build_all

        for line in build_all(manifest, res, overrides=overrides):
            typer.echo(f"warning: {line}", err=True)
    variants = expand(m)
    typer.echo(
        f"{manifest}: ok ({len(variants)} variant(s) x {len(m.seeds)} seed(s) = "
        f"{len(variants) * len(m.seeds)} units)"
    )
    note = not_checked_here({v.config.env.backend for v in variants if v.config})
    if note:
        typer.echo(f"note: {note}")
    if not deep:
        typer.echo(f"note: {deep_note(m)}")
    if show:
        for line in show_lines(res):
            typer.echo(line)


@app.command("track")
def track_cmd(run_dir: RunDirArg) -> None:
    """Upload to the manifest's trackers (track: mlflow, wandb) what a run's units have and
    their tracked runs lack, e.g. after a tracking server was unreachable during the run.

    Idempotent: each unit's track.json records what was uploaded; a second call sends nothing new.
    """
    from runner.manifest import read_resolved
    from runner.record.lock import locked
    from runner.track import check_installed, track_run, track_section, wanted

    res = read_resolved(run_dir)  # damaged: one line naming the file
    if not wanted(track_section(res)):
        raise UserInputError(f"{run_dir / 'resolved.yaml'}: track: the run has no trackers")
    check_installed(track_section(res))
    with locked(run_dir):
        done = track_run(run_dir, res, lambda line: typer.echo(f"warning: {line}", err=True))
    for name, n in done.items():
        typer.echo(f"{name}: {n} unit(s) brought up to date")


@app.command("schema")
def schema_cmd() -> None:
    """Print the manifest JSON Schema (for editor completion)."""
    from runner.manifest import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


@app.command("report")
def report_cmd(
    run_dir: RunDirArg,
    other: Annotated[
        Path | None,
        typer.Argument(
            help="A second run directory to compare with.", exists=True, file_okay=False
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="With two run directories: where compare.md goes "
            "(default: <runs>/comparisons/<A>--vs--<B>, beside A's runs).",
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Tables, learning curves, scaling curves, paired comparisons: report.md + PNGs.

    With two run directories A B: a seed-by-seed comparison (B − A) and how their manifests
    differ, in a folder of its own; neither run directory is written to.
    """
    try:
        from runner import report
    except ImportError as exc:
        raise BackendUnavailable(
            f"reports need {exc.name or 'numpy, scipy and matplotlib'}, not installed here: "
            "pip install 'rlcrate[report]'"
        ) from None

    path = report.compare_runs(run_dir, other, out) if other else report.write_report(run_dir)
    typer.echo(f"report: {path}")


@app.command("doctor")
def doctor_cmd(
    probe: Annotated[
        bool,
        typer.Option(
            "--probe",
            help="Start a container with each engine whose answer alone proves nothing "
            "(podman), rather than reuse the last probe's finding (shown with its age).",
        ),
    ] = False,
) -> None:
    """What this machine has: backends, Godot, container engines, GPU/driver, CPUs."""
    from runner.cli.doctor import doctor

    doctor(console(), probe=probe)


@app.command("envs")
def envs_cmd(
    backend: Annotated[str | None, typer.Argument(help="Only this backend.")] = None,
    all_ids: Annotated[bool, typer.Option("--all", help="List every id, not a sample.")] = False,
) -> None:
    """The backends and the env ids each offers."""
    from runner.cli.doctor import list_envs

    list_envs(console(), backend, all_ids)


def _add_image_app() -> None:
    from runner.cli.plugin import app as plugin_app
    from runner.images.cli import app as image_app

    app.add_typer(image_app, name="image", help="Build, export and list the versioned images.")
    app.add_typer(plugin_app, name="plugin", help="Check a backend, trainer or executor plugin.")


_add_image_app()


def _add_reproducibility_commands() -> None:
    from runner.cli.repro import register

    register(app)


_add_reproducibility_commands()


def main() -> None:
    """Console-script entry point: every error through `exit_status`."""
    try:
        code = app(standalone_mode=False)
    except (click.ClickException, typer.Abort, RunnerError, KeyboardInterrupt, OSError) as exc:
        code = exit_status(exc)
    sys.exit(code if isinstance(code, int) else 0)
