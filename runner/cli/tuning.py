"""`rlcrate tune` (loaded when it is called; Optuna only then)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.cli.executor import executor_options
from runner.cli.run import (
    ManifestArg,
    NumSeedsOpt,
    OutOpt,
    SeedsOpt,
    SetOpt,
    console,
    overrides_of,
)
from runner.executors import Chosen

app = typer.Typer()


@app.command("tune")
@executor_options
def tune_cmd(
    manifest: ManifestArg,
    out: OutOpt = Path("runs"),
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Continue this study's run directory: finished trials are kept, a trial cut "
            "mid-way runs again, the rest are asked for.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    sets: SetOpt = None,
    seeds: SeedsOpt = None,
    num_seeds: NumSeedsOpt = None,
    *,
    executor: Chosen,
) -> None:
    """Run an Optuna study over the manifest's tune.space, every trial on the same seeds.

    One run directory holds it: each trial a variant (units/trial-NNN/seed-N/), the study's
    journal, tune.json (every trial), best.yaml (the manifest with the best values) and the
    study's plots.
    """
    from runner.tune.loop import TuneOptions, tune

    opts = TuneOptions(executor, out, resume, overrides_of(sets, seeds, num_seeds))
    tune(manifest, opts, console())
