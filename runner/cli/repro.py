"""The reproducibility commands: `archive`, `reproduce`, `check-determinism` (loaded when one
is called)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.cli.executor import executor_options
from runner.cli.run import ImageOpt, ManifestArg, OutOpt, RunDirArg, console
from runner.errors import UserInputError
from runner.executors import Chosen

app = typer.Typer()

MAX_CHECK_STEPS = 10_000_000  # check-determinism compares a short slice; more is a typo


def _seed_list(seeds: str | None, num_seeds: str | None) -> list[int] | None:
    """`rlcrate run --seeds`'s parser (3, 0,2, 0-4) or `--num-seeds N` (0 to N-1): the archive's
    seeds to rerun; anything else is one line (exit 2)."""
    from runner.manifest.seeds import parse_num_seeds, parse_seeds

    if seeds is not None and num_seeds is not None:
        raise UserInputError("--seeds and --num-seeds: give one of them, not both")
    if seeds is not None:
        return parse_seeds(seeds)
    return parse_num_seeds(num_seeds) if num_seeds is not None else None


@app.command("archive")
def archive_cmd(
    run_dir: RunDirArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The .tar.gz to write.", dir_okay=False)
    ],
    models: Annotated[bool, typer.Option(help="Include model.zip and checkpoints.")] = True,
    tensorboard: Annotated[bool, typer.Option(help="Include the TensorBoard files.")] = True,
    videos: Annotated[
        bool, typer.Option(help="Include the units' evaluation videos (eval.video's video/).")
    ] = True,
    incomplete: Annotated[
        bool,
        typer.Option(help="Archive a run with failed or interrupted units, marked incomplete."),
    ] = False,
) -> None:
    """Bundle a finished run for a paper: a deterministic tar.gz with SHA-256 checksums."""
    from runner.archive import ArchiveOptions, archive
    from runner.record.rundir import file_sha256

    index = archive(run_dir, output, ArchiveOptions(models, tensorboard, incomplete, videos))
    n, size = index["contains"]["files"], output.stat().st_size
    mark = "" if index["run"]["complete"] else ", marked incomplete"
    typer.echo(f"archive: {output} ({n} files, {size / 1e6:.2f} MB{mark})")
    typer.echo(f"sha256: {file_sha256(output)}")


@app.command("reproduce")
@executor_options
def reproduce_cmd(
    archive_file: Annotated[
        Path,
        typer.Argument(help="An archive made by `rlcrate archive`.", exists=True, dir_okay=False),
    ],
    units: Annotated[
        int | None,
        typer.Option("--units", help="Rerun a sample: the first seeds covering N units."),
    ] = None,
    seeds: Annotated[
        str | None,
        typer.Option(
            "--seeds",
            metavar="SEEDS",
            help="Rerun only these seeds of the archive: 2 (seed 2), 0,2, 0-4.",
        ),
    ] = None,
    num_seeds: Annotated[
        str | None,
        typer.Option("--num-seeds", metavar="N", help="Rerun only the archive's seeds 0 to N-1."),
    ] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            "--trials",
            metavar="N",
            help="A study's archive (rlcrate tune): rerun its N best complete trials "
            "(default: the best one); the search is not rerun.",
        ),
    ] = None,
    image: ImageOpt = None,
    out: OutOpt = Path("runs"),
    alpha: Annotated[
        float, typer.Option("--alpha", help="Significance level, in (0, 0.5].")
    ] = 0.05,
    *,
    executor: Chosen,
) -> None:
    """Verify an archive, rerun it (or a sample), compare with the original: one verdict line.

    Exit 0 when the verdict holds (identical, or within tolerance, and expect: met), else 1."""
    from runner.archive import ReproduceOptions, reproduce

    chosen = _seed_list(seeds, num_seeds)
    if units is not None and chosen is not None:
        which = "--seeds" if seeds is not None else "--num-seeds"
        raise UserInputError(f"--units and {which}: give one of them, not both")
    if units is not None and units < 1:
        raise UserInputError(f"--units: expected a positive number of units, got {units}")
    if not 0 < alpha <= 0.5:
        raise UserInputError(f"--alpha: expected a significance level in (0, 0.5], got {alpha}")
    if trials is not None and trials < 1:
        raise UserInputError(f"--trials: expected a positive number of trials, got {trials}")
    opts = ReproduceOptions(out, executor, units, chosen, image, alpha, trials)
    raise typer.Exit(0 if reproduce(archive_file, opts, console()) else 1)


@app.command("check-determinism")
def check_determinism_cmd(
    manifest: ManifestArg,
    steps: Annotated[
        int | None,
        typer.Option("--steps", help="Env steps per attempt (default: 2 rollouts)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="The master seed both attempts use.")] = 0,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Instead: train the slice, then train it again killed (SIGKILL) after a "
            "checkpoint and resumed; `exact` when final parameters and TensorBoard scalars match. "
            "Its trainer must declare that it can be killed for the check (the KillForResume "
            "ability).",
        ),
    ] = False,
) -> None:
    """Train a short slice of the first unit twice with the same seed; compare hashes of
    observations, actions, rewards and final parameters: `bitwise`, or the first divergence."""
    from runner.run.check_determinism import check

    if steps is not None and not 1 <= steps <= MAX_CHECK_STEPS:
        raise UserInputError(
            f"--steps: expected 1 to {MAX_CHECK_STEPS:,} steps (a short slice), got {steps:,}"
        )
    if seed < 0:  # NumPy's SeedSequence, which derives every seed, takes none below 0
        raise UserInputError(f"--seed: expected a master seed of 0 or more, got {seed}")

    if resume:
        from runner.run.check_resume import check_resume

        raise typer.Exit(check_resume(manifest, steps, seed, console()))
    raise typer.Exit(check(manifest, steps, seed, console()))


@app.command("export")
def export_cmd(
    run_dir: RunDirArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The .onnx file to write.", dir_okay=False)
    ],
    variant: Annotated[
        str | None, typer.Option("--variant", help="The unit's variant (where there are several).")
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="The unit's seed (default: the run's first).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="onnx.")] = "onnx",
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            help="godot-rl (inputs obs, state_ins; outputs output, state_outs: what godot-rl's "
            "Godot plugin loads; the default for the godot backend) | sb3 (obs -> action, "
            "as the model's predict(); the default otherwise).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace OUTPUT (and OUTPUT.json) if they exist.")
    ] = False,
) -> None:
    """Write a trained unit's policy as ONNX (for a Godot game: the layout godot-rl's plugin
    loads), kept only if onnxruntime gives the model's own actions.

    The model is rebuilt from the run directory (nothing in it is unpickled); a normalized
    model has its frozen observation statistics folded in. OUTPUT.json records the unit, the
    layout and the check (onnxruntime against torch, and the actions against predict()).
    An existing OUTPUT is replaced only with --force; a path inside a run directory, or one
    that is not a regular file, never."""
    if fmt != "onnx":
        raise UserInputError(f"--format {fmt}: expected onnx")
    from runner.export import export_unit

    record = export_unit(run_dir, output, variant=variant, seed=seed, layout=layout, force=force)
    check = record["check"]
    unit = record["unit"]
    console().print(
        f"{output}: {record['layout']} layout, {unit['variant']}/seed-{unit['seed']}; checked on "
        f"{check['observations']} observations ({check['episode_observations']} of the replayed "
        f"first evaluation episode; largest difference {check['largest_difference']:.1e}, "
        f"actions agreeing {check['actions_agreeing']:.0%}, largest action difference "
        f"{check['largest_action_difference']:.1e})"
        + ("; observation normalization folded in" if record["normalization"] else ""),
        soft_wrap=True,
    )
