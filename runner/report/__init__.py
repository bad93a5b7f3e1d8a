"""Reports from a run directory: report.md, plots/*.png and a LaTeX eval table.

Everything is read back from the files a run leaves (status.json, eval.json, TensorBoard events,
summary.json, bench.json), so a report can be made for a run that is partial, failed or still
going: what is there is reported, what is missing is listed, unreadable files are named.

Names load on first use (PEP 562): `runner.report.summary` and `tb` are read by `status` and
`validate`, which must not pay for importing Matplotlib or SciPy here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from runner.report.write import levels_table, write_report

_HOMES = {
    "compare_runs": "compare",
    "write_latex": "latex",
    "Run": "load",
    "Unit": "load",
    "load_run": "load",
    "AUTO_LEVELS": "metrics",
    "best_counts": "metrics",
    "curve_groups": "metrics",
    "eval_rows": "metrics",
    "paired_rows": "metrics",
    "reward_levels": "metrics",
    "time_to_levels": "metrics",
    "varied_field": "metrics",
    "bench_lines": "sections",
    "levels_table": "write",
    "write_report": "write",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"runner.report.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'runner.report' has no attribute {name!r}")


__all__ = [
    "AUTO_LEVELS",
    "Run",
    "Unit",
    "best_counts",
    "bench_lines",
    "compare_runs",
    "curve_groups",
    "eval_rows",
    "levels_table",
    "load_run",
    "paired_rows",
    "reward_levels",
    "time_to_levels",
    "varied_field",
    "write_latex",
    "write_report",
]
