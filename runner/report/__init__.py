"""Reports from a run directory: report.md, plots/*.png and a LaTeX eval table.

Everything is read back from the files a run leaves (status.json, eval.json, TensorBoard events,
summary.json, bench.json), so a report can be made for a run that is partial, failed or still
going: what is there is reported, what is missing is listed, unreadable files are named.
"""

from runner.report.compare import compare_runs
from runner.report.latex import write_latex
from runner.report.load import Run, Unit, load_run
from runner.report.metrics import (
    AUTO_LEVELS,
    best_counts,
    curve_groups,
    eval_rows,
    paired_rows,
    reward_levels,
    time_to_levels,
    varied_field,
)
from runner.report.sections import bench_lines
from runner.report.write import write_report

__all__ = [
    "AUTO_LEVELS",
    "Run",
    "Unit",
    "best_counts",
    "bench_lines",
    "compare_runs",
    "curve_groups",
    "eval_rows",
    "load_run",
    "paired_rows",
    "reward_levels",
    "time_to_levels",
    "varied_field",
    "write_latex",
    "write_report",
]
