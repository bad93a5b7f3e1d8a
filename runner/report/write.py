"""`write_report`: report.md, plots/*.png and eval_table.tex for one run directory."""

from __future__ import annotations

from pathlib import Path

from runner.record.lock import NOT_WRITABLE, require_writable, unwritable_run
from runner.report import plots
from runner.report.latex import write_latex
from runner.report.load import load_run
from runner.report.markdown import rel_path, write_md
from runner.report.metrics import best_counts, curve_groups, eval_rows, paired_rows, varied_field
from runner.report.sections import (
    bench_section,
    eval_section,
    expect_section,
    hyperparameters_section,
    lineage_section,
    paired_section,
    problems_section,
    ttr_rows,
    ttr_section,
    units_section,
)
from runner.report.study import study_section
from runner.report.videos import videos_section


def levels_table(run_dir: Path, levels: list[float]) -> tuple[str, list[list[str]]]:
    """The "time to reach" table at `levels`, recomputed from the run's TensorBoard files:
    (the run's title, the rows; none while no unit has a curve). Reads only: nothing in the run
    directory is written."""
    run = load_run(run_dir)
    groups = curve_groups(run)
    rows = ttr_rows(groups, levels) if any(groups.values()) else []
    return f"{run.name} — run {run.run_id}", rows


def write_report(run_dir: Path) -> Path:
    """Write report.md, plots/*.png and eval_table.tex into the run directory; return report.md.
    A run directory that cannot be written is one line naming it (exit 2), checked first."""
    doing = "report writes report.md and plots/ into it"
    require_writable(run_dir, doing)
    try:
        return _write_report(run_dir)
    except OSError as exc:
        if exc.errno not in NOT_WRITABLE:
            raise
        raise unwritable_run(run_dir, exc, doing) from None


def _write_report(run_dir: Path) -> Path:
    run = load_run(run_dir)
    root, rows = run.path, eval_rows(run)
    groups = curve_groups(run)
    lc = plots.learning_curves(groups, root / "plots/learning_curves.png", title=run.name)
    ev = plots.eval_points(rows, root / "plots/eval.png", title=run.name)
    evaluated = [r for r in rows if r["n_seeds"] > 0]  # a paper's table has no empty rows
    if evaluated:
        caption = f"{run.name}: evaluation return across seeds"
        write_latex(evaluated, root / "eval_table.tex", caption)
    else:  # an older table of evaluations this run's files no longer give
        (root / "eval_table.tex").unlink(missing_ok=True)
    table = "LaTeX table of the evaluation: `eval_table.tex`." if evaluated else ""
    lines = [
        f"# {run.name} — run {run.run_id}",
        "",
        f"Seeds: {run.seeds}. Variants: {len(run.variants)}. {table}".rstrip(),
        "",
    ]
    if not any(u.state not in ("missing", "pending") or u.eval for u in run.units.values()):
        lines += ["No unit has been trained or evaluated in this run (a bench-only run?).", ""]
        return write_md(root / "report.md", lines + bench_section(run))
    lines += study_section(root) + hyperparameters_section(run) + lineage_section(run)
    lines += units_section(run) + eval_section(run, rows)
    lines += [f"![evaluation]({rel_path(ev, root)})", ""] if ev else []
    lines += videos_section(run)
    field_ = varied_field(run)
    per_seed = {r["variant"]: r["per_seed"] for r in rows}
    if field_ and len(rows) > 1:
        base, *others = per_seed
        title = f"Paired comparison over `{field_}`"
        lines += paired_section(
            title,
            base,
            paired_rows(per_seed[base], {v: per_seed[v] for v in others}),
            best_counts(per_seed, run.seeds),
        )
    lines += (
        ["## Learning curves", "", f"![learning curves]({rel_path(lc, root)})", ""]
        if lc
        else ["## Learning curves", "", "No readable TensorBoard curves.", ""]
    )
    lines += ttr_section(run, groups) + expect_section(run)
    lines += bench_section(run)
    return write_md(root / "report.md", lines + problems_section(run))
