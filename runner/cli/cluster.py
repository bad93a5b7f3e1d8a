"""`rlcrate status RUN_DIR`: where a run stands, with what its executor holds (Slurm's jobs)."""

from __future__ import annotations

from pathlib import Path


def status(run_dir: Path) -> int:
    """Print each unit's state (and its Slurm job's); write the summary once all have ended."""
    from rich.console import Console
    from rich.table import Table

    from runner.manifest import read_resolved
    from runner.run.status import collect

    console = Console(highlight=False)
    rows, finished, failed = collect(run_dir)
    table = Table(title=str(run_dir))
    for col in ("unit", "state", "job", "steps", "error"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if finished:
        from runner.report.summary import write_summary
        from runner.run.progress import print_failures, summary_table

        summary = write_summary(run_dir, read_resolved(run_dir))
        console.print(summary_table(summary))
        print_failures(console, summary)
    else:
        console.print("still running; run `rlcrate status` again later")
    return 1 if failed else 0
