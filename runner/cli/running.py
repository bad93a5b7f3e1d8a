"""The commands that run units: `run`, `train`, `eval`, `bench` (loaded when one is called)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner.cli.executor import executor_options
from runner.cli.run import (
    ImageOpt,
    ManifestArg,
    NumSeedsOpt,
    OutOpt,
    ResumeOpt,
    SeedsOpt,
    SetOpt,
    console,
    overrides_of,
    run_manifest,
)
from runner.executors import Chosen, choose

if TYPE_CHECKING:
    from runner.manifest import ResolvedRun

app = typer.Typer()


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
    manifest: Annotated[
        Path,
        typer.Argument(
            help="The manifest YAML file, or the run directory itself (its manifest.yaml, "
            "and --resume defaults to it).",
            exists=True,
            readable=True,
        ),
    ],
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="The run directory whose trained models to evaluate.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    video: Annotated[
        bool,
        typer.Option(
            "--video",
            help="Also record the evaluation's first episodes as videos (the manifest's "
            "eval.video, or one MP4 episode per unit when it has none); no retraining.",
        ),
    ] = False,
    sets: SetOpt = None,
    *,
    executor: Chosen,
) -> None:
    """Evaluate the trained models of a run directory with the manifest's eval protocol.

    `rlcrate eval RUN_DIR` evaluates that run with its own manifest.yaml. The run's own --set
    and --seeds apply; give --set again only to repeat them."""
    from runner.manifest import read_resolved
    from runner.record import started
    from runner.record.lock import locked
    from runner.record.status import read_status, write_status
    from runner.run.orchestrate import RunOptions, run

    manifest, resume = _eval_target(manifest, resume)
    with locked(resume):
        res = read_resolved(resume)
        started.check(resume)  # before any unit is marked to evaluate again
        if video:
            _check_video(resume, res)
        for unit in res.units():
            d = unit.dir(resume)
            if read_status(d).state == "done":
                write_status(d, "pending")  # evaluate again
        jobs = ["eval", "video"] if video else ["eval"]
        opts = RunOptions(jobs, executor, Path("runs"), resume, overrides=overrides_of(sets, None))
        run(manifest, opts, console())


def _eval_target(manifest: Path, resume: Path | None) -> tuple[Path, Path]:
    """(manifest, run directory) of `rlcrate eval`: a run directory given alone stands for both."""
    if manifest.is_dir():
        if resume is not None and resume.resolve() != manifest.resolve():
            raise typer.BadParameter(f"{manifest} is a run directory; --resume names another")
        return manifest / "manifest.yaml", manifest
    if resume is None:
        raise typer.BadParameter(f"{manifest} is a manifest: name its run with --resume RUN_DIR")
    return manifest, resume


def _check_video(run_dir: Path, res: ResolvedRun) -> None:
    """UserInputError, one line, when a variant of the run cannot record its evaluation."""
    from runner.checks.manifest import video_problems
    from runner.errors import UserInputError
    from runner.manifest.schema import VideoSpec

    for name, variant in res.variants.items():
        cfg = variant.config.model_copy(deep=True)
        cfg.eval.video = cfg.eval.video or VideoSpec()
        for p in video_problems(cfg):
            where = f"{run_dir / 'resolved.yaml'}: variant {name}: {'.'.join(map(str, p.path))}"
            raise UserInputError(f"eval --video: {where}: {p.message}")


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
