"""`rlcrate status RUN_DIR`: where a run stands, with what its executor holds (Slurm's jobs)."""

from __future__ import annotations

from pathlib import Path


def status(run_dir: Path) -> int:
    """Print each unit's state (and its Slurm job's); the summary once all have ended. Only
    looks: no unit's state is written, and summary.json only when the run has none yet (a
    detached Slurm run's first), never rewritten."""
    from rich.markup import escape
    from rich.table import Table

    from runner.cli.run import console as make_console
    from runner.manifest import read_resolved
    from runner.run.status import collect

    console = make_console()
    state = collect(run_dir)
    if state.bench_only:
        console.print(f"{escape(str(run_dir))}: a bench run (no units); results in bench.json")
        return 0
    table = Table(title=str(run_dir))
    for col in ("unit", "state", "job", "steps", "error"):
        table.add_column(col)
    for row in state.rows:
        table.add_row(*row)
    console.print(table)
    for note in state.notes:
        console.print(f"[yellow]{escape(note)}[/]")
    if state.ended:
        from runner.report.summary import recorded_summary, summarize, write_summary
        from runner.run.progress import print_failures, summary_table

        res = read_resolved(run_dir)
        summary = recorded_summary(run_dir, res)  # what the runner wrote, while still true
        shown: Table | None = None
        try:
            shown = summary_table(summary) if summary is not None else None
        except (LookupError, TypeError, ValueError, AttributeError):  # a damaged file: summarise
            shown = None
        if summary is None or shown is None:
            exists = (run_dir / "summary.json").exists()
            summary = summarize(run_dir, res) if exists else write_summary(run_dir, res)
            shown = summary_table(summary)
        console.print(shown)
        print_failures(console, summary)
        if state.stopped:
            from runner.run.status import resume_hint

            resume_hint(console, run_dir)
    else:
        console.print("still running; run `rlcrate status` again later")
    return 1 if state.failed else 0
