"""What `rlcrate run`, `train` and `bench` share: the arguments, the console, and how a manifest
is run here or handed to an image."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from runner.errors import RunnerError, UserInputError

# Exit statuses of `docker/podman run` itself (not of the command inside): the container never ran.
ENGINE_FAILED = {
    125: "the engine failed",
    126: "the runtime could not start the container",
    127: "the image has no rlcrate entrypoint",
}

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
ExecutorOpt = Annotated[str, typer.Option("--executor", "-x", help="local | ray | slurm")]
ImageOpt = Annotated[
    str | None,
    typer.Option(
        "--image",
        help="Where the units run: local (here), cpu, cuda or a full image tag; with slurm, a "
        ".sif (Apptainer). Default: the manifest's `image:` (itself local by default).",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address", help="Ray cluster address (default: RAY_ADDRESS, else a local cluster)."
    ),
]


def console():
    from rich.console import Console

    # logs and CI capture output without a terminal: give tables room instead of Rich's 80
    width = None if sys.stdout.isatty() else 120
    return Console(stderr=False, highlight=False, width=width)


def run_manifest(
    manifest: Path,
    jobs: str | None,
    executor: str,
    image: str | None,
    out: Path,
    resume: Path | None,
    ray_address: str | None,
    cluster: Any = None,
    expect: bool = True,
) -> None:
    from runner.executors import EXECUTORS
    from runner.run.orchestrate import RunOptions, parse_jobs, run

    job_list = parse_jobs(jobs) if jobs else None  # None: the jobs the manifest declares
    if executor not in EXECUTORS:
        raise typer.BadParameter(
            f"expected {' or '.join(EXECUTORS)}, got {executor!r}", param_hint="--executor"
        )
    where = image or _manifest_image(manifest)
    if where != "local" and cluster is not None and where.endswith(".sif"):
        cluster.image, where = str(Path(where).resolve()), "local"  # each Slurm unit in Apptainer
    if where != "local":
        from runner.images.run import run_in_image

        args = (["--jobs", jobs] if jobs else []) + ["--executor", executor]
        args += [] if expect else ["--no-expect"]
        if resume is not None:  # the run's parent folders become /out; its units resume there
            out, inner = _resume_in_image(resume)
            args += ["--resume", inner]
        code = run_in_image(manifest, where, out, args)
        if code in ENGINE_FAILED:  # the engine's own status: the runner inside never started
            raise RunnerError(
                f"the container engine could not start the image {where} (its exit status "
                f"{code}: {ENGINE_FAILED[code]}); `rlcrate doctor` says which engines work here"
            )
        typer.echo(f"(paths under /out above are under {out.resolve()} on this host)")
        raise typer.Exit(code)
    opts = RunOptions(job_list, executor, out, resume, ray_address, cluster=cluster)
    run_dir = run(manifest, opts, console())  # fills in opts.jobs from the manifest when None
    if expect and "eval" in (opts.jobs or []) and not getattr(cluster, "detach", False):
        from runner.run.expect import gate

        gate(run_dir)


def _resume_in_image(resume: Path) -> tuple[Path, str]:
    """(the folder to mount as the image's output folder, the run directory's path inside)."""
    from runner.images.engine import OUT_DIR

    run_dir = resume.resolve()
    if not (run_dir / "resolved.yaml").is_file():
        raise UserInputError(f"--resume {resume}: not a run directory (no resolved.yaml)")
    return run_dir.parent.parent, f"{OUT_DIR}/{run_dir.parent.name}/{run_dir.name}"


def _manifest_image(manifest: Path) -> str:
    """The manifest's `image:` (schema only: the backend need not be installed here)."""
    from runner.checks.load import load_manifest

    return load_manifest(manifest, check=False).image
