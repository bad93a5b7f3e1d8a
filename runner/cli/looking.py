"""The commands that look at manifests, runs and this machine, or write only what a run lacks:
`status`, `validate`, `track`, `schema`, `report`, `doctor`, `envs` (loaded when one is called)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from runner.cli import cluster as cc
from runner.cli.run import (
    ManifestArg,
    NumSeedsOpt,
    RunDirArg,
    SeedsOpt,
    SetOpt,
    console,
    overrides_of,
)
from runner.errors import BackendUnavailable, UserInputError

app = typer.Typer()


@app.command("status")
def status_cmd(run_dir: RunDirArg) -> None:
    """Where a run stands (units, their cluster jobs); the summary once every unit has ended."""
    raise typer.Exit(cc.status(run_dir))


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
    if m.tune is not None:  # `rlcrate run` would run the base manifest; the study is `tune`'s
        n = m.tune.trials
        shape = f"a study of up to {n} trial(s) x {len(m.seeds)} seed(s) = {n * len(m.seeds)}"
        typer.echo(f"{manifest}: ok ({shape} units, with `rlcrate tune`)")
    else:
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
    from runner import plugins
    from runner.manifest import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))
    for broken in plugins.left_out():
        typer.echo(f"warning: {broken}; the schema leaves it out", err=True)


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
    levels: Annotated[
        str | None,
        typer.Option(
            "--levels",
            help="Print the 'time to reach' table at these reward levels (comma-separated, "
            "e.g. 0.5,1,2 or =-20.5,-20), recomputed from the run's TensorBoard files; nothing "
            "in the run directory is written.",
        ),
    ] = None,
) -> None:
    """Tables, learning curves, scaling curves, paired comparisons: report.md + PNGs.

    With two run directories A B: a seed-by-seed comparison (B − A) and how their manifests
    differ, in a folder of its own; neither run directory is written to.
    """
    wanted = _levels(levels) if levels is not None else None
    if wanted is not None and other is not None:
        raise UserInputError("--levels: give one run directory (it prints that run's table)")
    try:
        from runner import report
    except ImportError as exc:
        raise BackendUnavailable(
            f"reports need {exc.name or 'numpy, scipy and matplotlib'}, not installed here: "
            "pip install 'rlcrate[report]'"
        ) from None

    if wanted is not None:
        _print_levels(*report.levels_table(run_dir, wanted))
        return
    path = report.compare_runs(run_dir, other, out) if other else report.write_report(run_dir)
    typer.echo(f"report: {path}")


MAX_LEVELS = 100  # a table of reward levels, not a sweep


def _levels(text: str) -> list[float]:
    """`--levels 0.5,1,2` as numbers; UserInputError naming the option otherwise."""
    import math

    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) for v in values) or len(values) > MAX_LEVELS:
        raise UserInputError(
            f"--levels {text[:60]!r}: expected up to {MAX_LEVELS} reward levels separated by "
            "commas, such as 0.5,1,2"
        )
    return values


def _print_levels(title: str, rows: list[list[str]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from runner.report.sections import TTR_HEADER

    what = "time to reach (rollout/ep_rew_mean, mean ± std over the seeds)"
    table = Table(title=f"{escape(title)}: {what}")
    for col in TTR_HEADER:
        table.add_column(col, justify="left" if col == "variant" else "right")
    for row in rows:  # a run's names are data, never markup
        table.add_row(*(escape(cell) for cell in row))
    out = console()
    if not rows:
        out.print(f"{escape(title)}: no unit has a rollout/ep_rew_mean curve to read (yet)")
        return
    out.print(table)


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
    from runner.cli.run import fitted_console

    doctor(fitted_console(), probe=probe)


@app.command("envs")
def envs_cmd(
    backend: Annotated[str | None, typer.Argument(help="Only this backend.")] = None,
    all_ids: Annotated[bool, typer.Option("--all", help="List every id, not a sample.")] = False,
) -> None:
    """The backends and the env ids each offers."""
    from runner.cli.doctor import list_envs

    list_envs(console(), backend, all_ids)
