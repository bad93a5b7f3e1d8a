"""The live progress display and the summary table (Rich)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from runner.record.progress import read_progress
from runner.record.rundir import UnitRef
from runner.record.status import read_status
from runner.record.summary import RunSummary, claims_met


def _eta(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "-"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressView:
    """Renders units done/total, steps, steps/s and ETA from the files units write."""

    def __init__(self, run_dir: Path, units: list[UnitRef], total_steps: dict[UnitRef, int]):
        self.run_dir, self.units, self.total_steps = run_dir, units, total_steps
        self.t0 = time.monotonic()

    def __rich__(self) -> Group:
        states: dict[str, int] = {}
        done_steps = 0
        rows = []
        for u in self.units:
            st = read_status(u.dir(self.run_dir)).state
            states[st] = states.get(st, 0) + 1
            prog = read_progress(u.dir(self.run_dir))  # damaged: shown as no progress yet
            steps = self.total_steps[u] if st == "done" else (prog.steps if prog else 0)
            done_steps += steps
            if st == "running":
                rate = prog.steps_per_s if prog else 0.0
                left = (self.total_steps[u] - steps) / rate if rate else None
                size = prog.checkpoint_bytes if prog else None
                rows.append(
                    (
                        u.key,
                        f"{steps:,}/{self.total_steps[u]:,}",
                        f"{rate:,.0f}",
                        _eta(left),
                        f"{size / 1e6:,.1f} MB" if size is not None else "-",
                    )
                )
        total = sum(self.total_steps.values())
        elapsed = time.monotonic() - self.t0
        overall = done_steps / elapsed if elapsed > 0 else 0
        eta = (total - done_steps) / overall if overall > 0 else None
        head = Text.assemble(
            ("units ", "bold"),
            f"{states.get('done', 0)}/{len(self.units)} done",
            f"  failed {states.get('failed', 0)}" if states.get("failed") else "",
            ("   steps ", "bold"),
            f"{done_steps:,}/{total:,}",
            ("   steps/s ", "bold"),
            f"{overall:,.0f}",
            ("   ETA ", "bold"),
            _eta(eta),
        )
        table = Table(box=None, show_header=bool(rows), pad_edge=False)
        for col in ("running unit", "steps", "steps/s", "ETA", "checkpoint"):
            table.add_column(col, justify="left" if col == "running unit" else "right")
        for row in rows:
            table.add_row(*row)
        return Group(head, table)


def _fmt(x: Any, digits: int = 2) -> str:
    return "-" if x is None or x != x else f"{x:,.{digits}f}"


def _caption(summary: RunSummary) -> str | None:
    counts = {v.eval.n_seeds for v in summary.variants.values()}
    if counts == {1}:
        return "one seed: no spread across seeds and no confidence interval to show"
    from runner.report.stats import iqm_note

    return iqm_note(counts)


def summary_table(summary: RunSummary) -> Table:
    table = Table(title=f"{summary.name} · {summary.run_id}", caption=_caption(summary))
    for col in (
        "variant",
        "seeds",
        "eval mean ± std",
        "IQM [95% CI]",
        "steps/s",
        "wall s",
        "expect",
    ):
        table.add_column(col, justify="left" if col in ("variant", "expect") else "right")
    for name, v in summary.variants.items():
        ev = v.eval
        ci = ev.iqm_ci95 or [None, None]
        expects = v.expect
        exp = (
            {True: "[green]met[/]", False: "[red]not met[/]", None: "no results yet"}[
                claims_met(expects)
            ]
            if expects
            else "-"
        )
        n = ev.n_seeds
        seeds = f"{n}/{len(v.units)}"
        one = n == 1 or ev.mean is None
        table.add_row(
            escape(name),
            seeds,
            _fmt(ev.mean) if one else f"{_fmt(ev.mean)} ± {_fmt(ev.std)}",
            _fmt(ev.iqm) if one else f"{_fmt(ev.iqm)} [{_fmt(ci[0])}, {_fmt(ci[1])}]",
            _fmt(v.train_steps_per_s.mean, 0),
            _fmt(v.wall_time_s.mean, 1),
            exp,
        )
    return table


def print_failures(console: Console, summary: RunSummary) -> None:
    for name, v in summary.variants.items():
        for seed, u in v.units.items():
            if u.state in ("failed", "interrupted"):
                error = escape(str(u.error))
                console.print(f"[red]{escape(name)}/seed-{seed} {u.state}[/]: {error}")
