"""What `rlcrate run`, `train` and `bench` share: the arguments, the console, and how a manifest
is run here or handed to an image."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from runner.errors import RunnerError, UserInputError

# Exit statuses of `docker/podman run` itself (not of the command inside): the container never ran.
ENGINE_FAILED = {
    125: "the engine failed",
    126: "the runtime could not start the container",
    127: "the image has no rlcrate entrypoint",
}

if TYPE_CHECKING:
    from runner.executors import Chosen
    from runner.images.sif import SifImage
    from runner.manifest.overrides import Override

ManifestArg = Annotated[
    Path, typer.Argument(help="Manifest YAML file.", exists=True, dir_okay=False, readable=True)
]
RunDirArg = Annotated[
    Path,
    typer.Argument(help="A run directory (runs/<name>/<run-id>).", exists=True, file_okay=False),
]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Where run directories go.")]
ResumeOpt = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        help="Continue this run directory: skip units already done.",
        exists=True,
        file_okay=False,
    ),
]
ImageOpt = Annotated[
    str | None,
    typer.Option(
        "--image",
        help="Where the units run: local (here), cpu, cuda or a full image tag, or a .sif "
        "(Apptainer; with slurm, each unit's job runs in it). Default: the manifest's `image:` "
        "(itself local by default).",
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        metavar="PATH=VALUE",
        help="Change one manifest value without editing the file (repeatable): a dotted path, "
        "a YAML value, e.g. -s algo.params.n_steps=64 -s env.kwargs={max_episode_steps: 200}. "
        "Validated as the file is; applied before the matrix is expanded; recorded in the run.",
    ),
]
SeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--seeds",
        metavar="SEEDS",
        help="The seeds to run instead of the manifest's: 3 (seed 3), 0,2 (seeds 0 and 2), 0-4 "
        "(seeds 0 to 4). Recorded in the run.",
    ),
]
NumSeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--num-seeds",
        metavar="N",
        help="Run N seeds, 0 to N-1, instead of the manifest's (or give --seeds). Recorded in "
        "the run.",
    ),
]


UNLIMITED_WIDTH = 1000
FALLBACK_WIDTH = 100  # a table of prose (doctor's) with no terminal to fit and no COLUMNS


def console():
    from rich.console import Console

    # Without a terminal (a file, a pipe, a log) there is no width to fit: Rich's 80 columns would
    # cut variant names to `learning_r…`, so tables and lines keep their own width there.
    width = None if sys.stdout.isatty() else UNLIMITED_WIDTH
    return Console(stderr=False, highlight=False, width=width)


def fitted_console():
    """A console as wide as the terminal, for tables of prose that wrap (doctor's details): the
    COLUMNS variable, else the terminal of any standard stream (stdout piped to a pager, stderr
    still a terminal), else FALLBACK_WIDTH; never a line as long as its longest sentence."""
    import os

    from rich.console import Console

    width = None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    for stream in (sys.stdout, sys.stderr, sys.stdin):
        if width is None:
            try:
                width = os.get_terminal_size(stream.fileno()).columns
            except (AttributeError, OSError, ValueError):
                continue
    return Console(stderr=False, highlight=False, width=width or FALLBACK_WIDTH)


def run_manifest(
    manifest: Path,
    jobs: str | None,
    executor: Chosen,
    image: str | None,
    out: Path,
    resume: Path | None,
    expect: bool = True,
    overrides: list[Override] | None = None,
    report: bool = True,
) -> None:
    from runner.run.orchestrate import RunOptions, parse_jobs, run

    job_list = parse_jobs(jobs) if jobs else None  # None: the jobs the manifest declares
    overrides = overrides or []
    if resume is not None and not overrides:  # the run's own --set and --seeds
        overrides = recorded_overrides(resume)
    pinned = _manifest_image(manifest, overrides)
    where = image or pinned
    if where != "local" and executor.settings.takes_image(where):
        where = "local"  # the executor runs each unit in the image (Slurm: a .sif, Apptainer)
    if where != "local":
        args = (["--jobs", jobs] if jobs else []) + ["--executor", executor.name]
        args += [] if expect else ["--no-expect"]
        args += [] if report else ["--no-report"]
        sif = _checked_sif(where, pinned, resume)
        _run_inside(manifest, where, sif, out, resume, args + cli_args(overrides))
    held = executor.settings.unit_image()  # (from --image, or the executor's profile)
    sif = _checked_sif(held, pinned, resume) if held else None
    image_record = sif.record() if sif is not None else None  # what provenance.json records
    opts = RunOptions(
        job_list, executor, out, resume, report=report, overrides=overrides, image=image_record
    )
    run_dir = run(manifest, opts, console())  # fills in opts.jobs from the manifest when None
    if expect and "eval" in (opts.jobs or []) and not executor.settings.detached:
        from runner.run.expect import gate

        gate(run_dir)


def _run_inside(
    manifest: Path,
    where: str,
    sif: SifImage | None,
    out: Path,
    resume: Path | None,
    args: list[str],
) -> NoReturn:
    """The same run inside the image `where` (a .sif: under Apptainer); exits with the status of
    the runner inside."""
    from runner.images.run import run_in_image
    from runner.images.sif_run import run_in_sif

    if resume is not None:  # the run's parent folders become /out; its units resume there
        out, inner = _resume_in_image(resume)
        args = [*args, "--resume", inner]
    if sif is not None:
        code = run_in_sif(manifest, sif, out, args)
    else:
        code = run_in_image(manifest, where, out, args)
    if code in ENGINE_FAILED:  # the engine's own status: the runner inside never started
        raise RunnerError(
            f"the container engine could not start the image {where} (its exit status "
            f"{code}: {ENGINE_FAILED[code]}); `rlcrate doctor` says which engines work here"
        )
    typer.echo(f"(paths under /out above are under {out.resolve()} on this host)")
    raise typer.Exit(code)


def _checked_sif(where: str, pinned: str, resume: Path | None) -> SifImage | None:
    """A .sif named as the image: an rlcrate image of the lock the manifest's image pins, and,
    on --resume, the one the run started with (UserInputError otherwise); None for any other
    image."""
    from runner.images.sif import check, is_sif

    if not is_sif(where):
        return None
    sif = check(Path(where), pinned)
    if resume is not None:
        from runner.record.provenance import read_provenance

        prov = read_provenance(resume)
        recorded = prov.image.get("digest") if prov is not None else None
        if recorded and recorded != sif.digest:
            raise UserInputError(
                f"--resume {resume}: its units ran in an image of digest {recorded[:19]}, and "
                f"{sif.path} is {sif.digest[:19]}; resume with the .sif it started with"
            )
    return sif


def _resume_in_image(resume: Path) -> tuple[Path, str]:
    """(the folder to mount as the image's output folder, the run directory's path inside)."""
    from runner.images.engine import OUT_DIR

    run_dir = resume.resolve()
    if not (run_dir / "resolved.yaml").is_file():
        raise UserInputError(f"--resume {resume}: not a run directory (no resolved.yaml)")
    return run_dir.parent.parent, f"{OUT_DIR}/{run_dir.parent.name}/{run_dir.name}"


def _manifest_image(manifest: Path, overrides: list[Override]) -> str:
    """The manifest's `image:` (schema only: the backend need not be installed here)."""
    from runner.checks.load import load_manifest

    return load_manifest(manifest, check=False, overrides=overrides).image


def overrides_of(
    sets: list[str] | None, seeds: str | None, num_seeds: str | None = None
) -> list[Override]:
    """The command line's --set, --seeds and --num-seeds as overrides (UserInputError, exit 2,
    when bad)."""
    from runner.manifest.overrides import build

    return build(sets or [], seeds, num_seeds)


def recorded_overrides(run_dir: Path) -> list[Override]:
    from runner.manifest.overrides import of_run

    return of_run(run_dir)


def cli_args(overrides: list[Override]) -> list[str]:
    from runner.manifest.overrides import cli_args as args

    return args(overrides)
