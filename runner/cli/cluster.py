"""Cluster options of `rlcrate run` (Slurm settings, --detach) and `rlcrate status RUN_DIR`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from runner.errors import UserInputError

ProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        help="Slurm settings file (partition, account, time, sbatch, setup, python, image).",
        exists=True,
        dir_okay=False,
    ),
]
PartitionOpt = Annotated[str | None, typer.Option("--partition", help="Slurm partition.")]
AccountOpt = Annotated[str | None, typer.Option("--account", help="Slurm account.")]
TimeOpt = Annotated[
    str | None,
    typer.Option("--time", help="Slurm time limit per unit job (minutes or [D-]HH:MM:SS)."),
]
SbatchOpt = Annotated[
    list[str] | None,
    typer.Option("--sbatch", help="Further sbatch option KEY=VALUE (e.g. qos=long); repeatable."),
]
DetachOpt = Annotated[
    bool,
    typer.Option(
        "--detach", help="slurm: return once submitted; follow with `rlcrate status RUN_DIR`."
    ),
]


def cluster_settings(
    executor: str,
    profile: Path | None,
    partition: str | None,
    account: str | None,
    time: str | None,
    sbatch: list[str] | None,
    detach: bool,
) -> Any:
    """The SlurmSettings for `--executor slurm`; an error if Slurm flags come with another."""
    given = [
        n
        for n, v in (
            ("--profile", profile),
            ("--partition", partition),
            ("--account", account),
            ("--time", time),
            ("--sbatch", sbatch),
            ("--detach", detach),
        )
        if v
    ]
    if executor != "slurm":
        if given:
            raise UserInputError(f"{given[0]} applies only to --executor slurm")
        return None
    from runner.executors.slurm_profile import settings

    extra: dict[str, str | int | bool] = {}
    for item in sbatch or []:
        key, sep, value = item.partition("=")
        if not key or key.startswith("-"):
            raise UserInputError(f"--sbatch {item!r}: expected KEY=VALUE without leading dashes")
        extra[key] = value if sep else True
    flags = {"partition": partition, "account": account, "time": time, "detach": detach}
    return settings(profile, flags, extra)


def status(run_dir: Path) -> int:
    """Print each unit's state (and its Slurm job's); the summary once all have ended. Only
    looks: no unit's state is written, and summary.json only when the run has none yet (a
    detached Slurm run's first), never rewritten."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from runner.manifest.parse import read_yaml
    from runner.run.status import collect

    console = Console(highlight=False)
    state = collect(run_dir)
    if state.bench_only:
        console.print(f"{escape(str(run_dir))}: a bench run (no units); results in bench.json")
        return 0
    table = Table(title=str(run_dir))
    for col in ("unit", "state", "slurm job", "steps", "error"):
        table.add_column(col)
    for row in state.rows:
        table.add_row(*row)
    console.print(table)
    for note in state.notes:
        console.print(f"[yellow]{escape(note)}[/]")
    if state.ended:
        from runner.report.summary import summarize, write_summary
        from runner.run.progress import print_failures, summary_table

        res, _ = read_yaml(run_dir / "resolved.yaml")
        if (run_dir / "summary.json").exists():
            summary = summarize(run_dir, res)
        else:
            summary = write_summary(run_dir, res)
        console.print(summary_table(summary))
        print_failures(console, summary)
    else:
        console.print("still running; run `rlcrate status` again later")
    return 1 if state.failed else 0
