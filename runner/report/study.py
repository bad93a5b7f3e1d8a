"""The report's section on a study (`rlcrate tune`): each trial's values, per-seed results and
objective from tune.json, the best trial, and the study's plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.record.tune import TrialRecord, read_tune
from runner.report.markdown import fmt, md_table

PLOTS = (
    ("tune-history.png", "optimisation history"),
    ("tune-importance.png", "parameter importances"),
    ("tune-parallel.png", "parallel coordinates"),
)


def _value(v: Any) -> str:
    return fmt(v, 4) if isinstance(v, float) else str(v)


TOP = 10  # the best complete trials whose objective gets a confidence interval


def _ci(stat: str, values: list[float]) -> str:
    """The 95% percentile-bootstrap CI of `stat` over a trial's per-seed values."""
    from runner.report.stats import bootstrap_ci, iqm_ci

    if stat == "min" or len(values) < 2:
        return "—"
    low, high = iqm_ci(values)[1:] if stat == "iqm" else bootstrap_ci(values)
    return f"[{fmt(low)}, {fmt(high)}]"


def _state(t: TrialRecord) -> str:
    if t.state == "pruned":
        return f"pruned at step {t.pruned_at}"
    return t.state if t.error is None else f"{t.state}: {t.error}"


def study_section(run_dir: Path) -> list[str]:
    """`## Study` for a run made by `rlcrate tune`; nothing for any other run."""
    record = read_tune(run_dir)
    if record is None:
        return []
    st = record.study
    paths = list(record.trials[0].params) if record.trials else []
    sign = 1.0 if st.direction == "maximize" else -1.0
    done = [t for t in record.trials if t.state == "complete" and t.objective is not None]
    top = {t.number for t in sorted(done, key=lambda t: -sign * (t.objective or 0.0))[:TOP]}
    rows = [
        [
            t.variant + (" (best)" if t.number == record.best else ""),
            *[_value(t.params.get(p)) for p in paths],
            ", ".join(fmt(v) for v in t.per_seed.values()),
            fmt(t.objective),
            _ci(st.stat, [v for v in t.per_seed.values() if v is not None])
            if t.number in top
            else "",
            _state(t),
        ]
        for t in record.trials
    ]
    headers = ["trial", *[f"`{p}`" for p in paths], "per seed", st.stat, "95% CI", "state"]
    lines = [
        "## Study",
        "",
        f"Optuna {st.optuna_version}, sampler {st.sampler} (seed {st.sampler_seed}), "
        f"{len(record.trials)} of {st.trials} trials, each on seeds {record.seeds}; objective: "
        f"{st.direction} the {st.stat} of `{st.metric}` over the seeds; pruner {st.pruner}. "
        f"Replays {st.replays}. `best.yaml` is the manifest with the best trial's values.",
        "",
        *md_table(headers, rows),
        f"95% CI: a percentile bootstrap over the trial's seeds, for the {TOP} best complete "
        "trials; a trial whose interval overlaps the best's is not shown worse by these seeds, "
        "and a wide interval is a trial carried by one seed. A pruned trial's values are its "
        "evaluations during training at the step it was stopped on.",
        "",
    ]
    for name, what in PLOTS:
        if (run_dir / "plots" / name).is_file():
            lines += [f"![{what}](plots/{name})", ""]
    return lines
