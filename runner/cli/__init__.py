"""The `rlcrate` command line. Commands are thin; the one place errors become exit codes is `main`.

Exit status: 0 success, 1 a unit failed (or `reproduce` found a difference), 2 bad input
(manifest, arguments, a refused archive), 3 `expect:` claims not met, 130 interrupted.
Each command's module is imported only when that command runs (`runner.cli.lazy`), so
`rlcrate --help` and the commands that only look stay fast.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from runner import __version__
from runner.cli.exit import click, exit_status
from runner.cli.lazy import Lazy, LazyGroup
from runner.errors import RunnerError

RUNNING, LOOKING, REPRO = "runner.cli.running", "runner.cli.looking", "runner.cli.repro"

# Every command, in the order `rlcrate --help` lists them, with the line it shows there (the
# first paragraph of the command's help; tests/cli/test_cli.py checks they agree).
COMMANDS: dict[str, Lazy] = {
    "run": Lazy(
        RUNNING,
        "Run the manifest's jobs for every (variant, seed) unit; print progress and a summary.",
    ),
    "status": Lazy(
        LOOKING,
        "Where a run stands (units, their cluster jobs); the summary once every unit has ended.",
    ),
    "train": Lazy(RUNNING, "Train every unit (no evaluation)."),
    "eval": Lazy(
        RUNNING,
        "Evaluate the trained models of a run directory with the manifest's eval protocol.",
    ),
    "bench": Lazy(
        RUNNING, "Benchmark env-only and training steps/s over the manifest's bench.sweep."
    ),
    "tune": Lazy(
        "runner.cli.tuning",
        "Run an Optuna study over the manifest's tune.space, every trial on the same seeds.",
    ),
    "validate": Lazy(
        LOOKING,
        "Check a manifest; every problem names the file, line and field (or the --set that "
        "caused it).",
    ),
    "track": Lazy(
        LOOKING,
        "Upload to the manifest's trackers (track: mlflow, wandb) what a run's units have and "
        "their tracked runs lack, e.g. after a tracking server was unreachable during the run.",
    ),
    "schema": Lazy(LOOKING, "Print the manifest JSON Schema (for editor completion)."),
    "report": Lazy(
        LOOKING,
        "Tables, learning curves, scaling curves, paired comparisons: report.md + PNGs.",
    ),
    "doctor": Lazy(
        LOOKING, "What this machine has: backends, Godot, container engines, GPU/driver, CPUs."
    ),
    "envs": Lazy(LOOKING, "The backends and the env ids each offers."),
    "archive": Lazy(
        REPRO,
        "Bundle a finished run for a paper: a deterministic tar.gz with SHA-256 checksums.",
    ),
    "reproduce": Lazy(
        REPRO,
        "Verify an archive, rerun it (or a sample), compare with the original: one verdict line.",
    ),
    "check-determinism": Lazy(
        REPRO,
        "Train a short slice of the first unit twice with the same seed; compare hashes of "
        "observations, actions, rewards and final parameters: `bitwise`, or the first "
        "divergence.",
    ),
    "export": Lazy(
        REPRO,
        "Write a trained unit's policy as ONNX (for a Godot game: the layout godot-rl's plugin "
        "loads), kept only if onnxruntime gives the model's own actions.",
    ),
    "image": Lazy("runner.images.cli", "Build, export and list the versioned images.", group=True),
    "godot": Lazy(
        "runner.backends.godot.cli",
        "Godot games: export a Godot 4 project as a headless game binary.",
        group=True,
    ),
    "plugin": Lazy("runner.cli.plugin", "Check a backend, trainer or executor plugin.", group=True),
}


class Root(LazyGroup):
    commands_table = COMMANDS


app = typer.Typer(
    name="rlcrate",
    cls=Root,
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


def main() -> None:
    """Console-script entry point: every error through `exit_status`."""
    try:
        code = app(standalone_mode=False)
    except (click.ClickException, typer.Abort, RunnerError, KeyboardInterrupt, OSError) as exc:
        code = exit_status(exc)
    sys.exit(code if isinstance(code, int) else 0)
