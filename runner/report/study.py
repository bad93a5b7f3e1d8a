"""The report's section on a study (`rlcrate tune`): each trial's values, per-seed results and
objective from tune.json, the best trial, and the study's plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.record.tune import read_tune
from runner.report.markdown import fmt, md_table

PLOTS = (
    ("tune-history.png", "optimisation history"),
    ("tune-importance.png", "parameter importances"),
    ("tune-parallel.png", "parallel coordinates"),
)


def _value(v: Any) -> str:
    return fmt(v, 4) if isinstance(v, float) else str(v)


def study_section(run_dir: Path) -> list[str]:
    """`## Study` for a run made by `rlcrate tune`; nothing for any other run."""
    record = read_tune(run_dir)
    if record is None:
        return []
    st = record.study
    paths = list(record.trials[0].params) if record.trials else []
    rows = [
        [
            t.variant + (" (best)" if t.number == record.best else ""),
            *[_value(t.params.get(p)) for p in paths],
            ", ".join(fmt(v) for v in t.per_seed.values()),
            fmt(t.objective),
            t.state if t.error is None else f"{t.state}: {t.error}",
        ]
        for t in record.trials
    ]
    headers = ["trial", *[f"`{p}`" for p in paths], "per seed", st.stat, "state"]
    lines = [
        "## Study",
        "",
        f"Optuna {st.optuna_version}, sampler {st.sampler} (seed {st.sampler_seed}), "
        f"{len(record.trials)} of {st.trials} trials, each on seeds {record.seeds}; objective: "
        f"{st.direction} the {st.stat} of `{st.metric}` over the seeds. `best.yaml` is the "
        "manifest with the best trial's values.",
        "",
        *md_table(headers, rows),
    ]
    for name, what in PLOTS:
        if (run_dir / "plots" / name).is_file():
            lines += [f"![{what}](plots/{name})", ""]
    return lines
