"""A study's records checked against each other before anything believes them: tune.json against
the units' own files and resolved.yaml (here, as `reproduce` checks summary.json against the
eval files), and, when a study is resumed, against its journal (`journal_disagrees`).

What each record says:
- `tune.json`: every trial's values, per-seed results, objective and state; the best trial.
- `resolved.yaml`: the variant each trial's units ran (its overrides are the trial's values).
- the units' `eval.json` / `status.json`: the per-seed numbers a trial is judged on.
- `study.journal`: what Optuna was asked and told (the sampler draws from it).

A disagreement is one line naming the file that disagrees and how (`RunFileError`, exit 2),
never a study relabelled: a resumed study would otherwise draw new values for trials whose
units trained with the old ones, and `reproduce` would rerun a trial the figures do not pick.
No Optuna here: `archive` and `reproduce` check an archived study without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from runner.manifest.resolved import ResolvedRun
from runner.record.tune import TUNE_FILE, TrialRecord, TuneRecord

# (variant, seed) -> the objective's metric of that unit as its own files give it (None: the
# unit is not done, or has no such number)
UnitMetric = Callable[[str, int], float | None]

# The objective's metric -> the field of a unit's status.json that holds it; eval.mean_reward is
# eval.json's mean of its episodes
STATUS_FIELD = {"train.steps_per_s": "train_steps_per_s", "train.wall_time_s": "train_wall_time_s"}


def objective(stat: str, per_seed: list[float]) -> float:
    """`stat` over a trial's per-seed values: iqm (SciPy's 25% trimmed mean), mean or min."""
    if stat == "min":
        return min(per_seed)
    if stat == "mean":
        return sum(per_seed) / len(per_seed)
    from scipy.stats import trim_mean

    return float(trim_mean(per_seed, 0.25))


def run_metric(run_dir: Path, metric: str) -> UnitMetric:
    """A unit's metric from a run directory's files, as `judge` read it (summary.json's way)."""
    from runner.record.eval import EVAL_FILE, read_eval
    from runner.record.rundir import UnitRef
    from runner.record.status import read_status

    def of(variant: str, seed: int) -> float | None:
        unit_dir = UnitRef(variant, seed).dir(run_dir)
        status = read_status(unit_dir)
        if status.state != "done":
            return None
        if metric == "eval.mean_reward":
            ev = read_eval(unit_dir / EVAL_FILE)
            return ev.mean if ev else None
        value = getattr(status, STATUS_FIELD[metric])
        return float(value) if value is not None else None

    return of


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _trial_disagrees(
    t: TrialRecord, record: TuneRecord, res: ResolvedRun, metric_of: UnitMetric
) -> str | None:
    variant = res.variants.get(t.variant)
    if t.variant != f"trial-{t.number:03d}":
        return f"trial {t.number} is named {t.variant!r}, not trial-{t.number:03d}"
    if variant is not None and variant.overrides != t.params:
        return (
            f"{t.variant}'s values {t.params} are not the ones resolved.yaml says its units ran "
            f"({variant.overrides})"
        )
    if t.state != "complete":
        return None
    if variant is None:
        return f"{t.variant} is complete, and resolved.yaml has no such variant"
    if t.objective is None or not math.isfinite(t.objective):
        return f"{t.variant} is complete with objective {t.objective}"
    if sorted(t.per_seed) != sorted(str(s) for s in record.seeds):
        seeds = sorted(t.per_seed)
        return f"{t.variant} has results for seeds {seeds}; the study runs {record.seeds}"
    for seed in record.seeds:
        got, want = t.per_seed[str(seed)], metric_of(t.variant, seed)
        if not _close(got, want):
            return f"{t.variant}/seed-{seed}: {got}, its unit's files give {want}"
    values = [v for v in t.per_seed.values() if v is not None]
    want_objective = objective(record.study.stat, values)
    if not _close(t.objective, want_objective):
        return (
            f"{t.variant}: objective {t.objective}, its seeds' results give {want_objective} "
            f"({record.study.stat})"
        )
    return None


def record_disagrees(record: TuneRecord, res: ResolvedRun, metric_of: UnitMetric) -> str | None:
    """Where tune.json disagrees with resolved.yaml or the units' files (None: nowhere)."""
    if record.seeds != list(res.seeds):
        return f"it runs seeds {record.seeds}, resolved.yaml {list(res.seeds)}"
    numbers = [t.number for t in record.trials]
    if len(set(numbers)) != len(numbers):
        return "it lists a trial twice"
    for t in record.trials:
        why = _trial_disagrees(t, record, res, metric_of)
        if why is not None:
            return why
    sign = 1.0 if record.study.direction == "maximize" else -1.0
    done = [t for t in record.trials if t.state == "complete" and t.objective is not None]
    best = max(done, key=lambda t: (sign * (t.objective or 0.0), -t.number)) if done else None
    if record.best != (best.number if best else None):
        return f"its best trial is {record.best}, its trials' objectives make it " + (
            f"{best.number}" if best else "none"
        )
    return None


def refused(file: str, why: str, doing: str) -> str:
    return f"{file}: disagrees with the study's other records ({why}); {doing}"


def unlisted_units(record: TuneRecord | None, unit_variants: Iterable[str]) -> list[str]:
    """Trial variants with units that tune.json does not list."""
    listed = {t.variant for t in record.trials} if record is not None else set()
    return sorted(v for v in unit_variants if v.startswith("trial-") and v not in listed)


def journal_disagrees(
    record: TuneRecord | None,
    journal: list[Any],
    values_of: Callable[[Any], dict[str, Any] | None],
) -> tuple[str, str] | None:
    """(file, why) where tune.json and the journal's trials (Optuna FrozenTrials) disagree;
    `values_of(trial)`: the manifest values a journal trial drew (None when it cannot say: a
    named space, or a trial asked but not given all its values)."""
    finished = {"COMPLETE": "complete", "FAIL": "failed", "PRUNED": "pruned"}
    by_number = {t.number: t for t in journal}
    listed = {t.number: t for t in record.trials} if record is not None else {}
    for number, t in sorted(by_number.items()):
        state = finished.get(t.state.name)
        if state is not None and number not in listed:
            return TUNE_FILE, (
                f"the study's journal holds trial {number} as {state}, and tune.json "
                + ("is missing" if record is None else "does not list it")
            )
    for number, mine in sorted(listed.items()):
        theirs = by_number.get(number)
        if theirs is None:
            return "study.journal", (
                f"it holds {len(journal)} trial(s), and tune.json lists trial {number} as "
                f"{mine.state}"
            )
        drawn = values_of(theirs)
        if drawn is not None and drawn != mine.params:
            return TUNE_FILE, (f"trial {number}'s values {mine.params}, the journal's {drawn}")
        state = finished.get(theirs.state.name)
        if mine.state != "running" and state != mine.state:
            return TUNE_FILE, (
                f"trial {number} is {mine.state} there, {state or 'running'} in the journal"
            )
        if mine.state == "complete" and not _close(mine.objective, _value(theirs)):
            return TUNE_FILE, (
                f"trial {number}'s objective {mine.objective}, the journal's {_value(theirs)}"
            )
    return None


def _value(trial: Any) -> float | None:
    values = trial.values
    return float(values[0]) if values else None
