"""summary.json: per variant, per-seed eval, across-seed statistics, timings, expectations."""

from __future__ import annotations

import operator
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.record.eval import read_eval
from runner.record.rundir import UnitRef
from runner.record.status import STATUS_FILE, UnitStatus, read_status
from runner.record.summary import (
    SUMMARY_FILE,
    Claim,
    EvalSummary,
    MeanStd,
    Reach,
    RunSummary,
    UnitSummary,
    VariantSummary,
    claims_met,
    read_summary,
    write_summary_record,
)
from runner.trainers.base import EVAL_FILE, TB_DIR

if TYPE_CHECKING:
    from runner.manifest import Manifest, ResolvedRun

# The metrics `expect:` claims may name (validate checks names against this one list).
EXPECT_METRICS = {
    "eval.mean_reward": "across-seed mean of the per-seed mean eval return",
    "eval.std_reward": "across-seed standard deviation of the per-seed means",
    "eval.iqm": "interquartile mean of the per-seed means",
    "eval.iqm_ci_low": "lower end of the IQM's 95% bootstrap CI",
    "eval.min_seed_reward": "the worst seed's mean eval return",
    "train.steps_per_s": "mean training steps per second across seeds",
    "train.wall_time_s": "mean training wall time across seeds",
}
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}


def _time_to_reward(unit_dir: Path, levels: list[float], started: float | None) -> dict[str, Any]:
    from runner.report.tb import read_curve, time_to_reach

    curve, problem = read_curve(unit_dir / TB_DIR, started)
    if curve is None:
        return {"error": problem}
    return {str(level): (t[0] if (t := time_to_reach(curve, level)) else None) for level in levels}


def train_origin(status: UnitStatus) -> float | None:
    """When the unit's training started: the origin of every time-to-reach."""
    return status.train_started if status.train_started is not None else status.started


def metric_values(variant: VariantSummary) -> dict[str, float | None]:
    """Each of EXPECT_METRICS for one variant of summary.json."""
    ev = variant.eval
    return {
        "eval.mean_reward": ev.mean,
        "eval.std_reward": ev.std,
        "eval.iqm": ev.iqm,
        "eval.iqm_ci_low": (ev.iqm_ci95 or [None])[0],
        "eval.min_seed_reward": min(ev.per_seed_mean.values()) if ev.per_seed_mean else None,
        "train.steps_per_s": variant.train_steps_per_s.mean,
        "train.wall_time_s": variant.wall_time_s.mean,
    }


def check_expectations(variant: VariantSummary, expect: dict[str, dict[str, float]]) -> list[Claim]:
    values = metric_values(variant)
    results = []
    for metric, claims in expect.items():
        for op, target in claims.items():
            actual = values.get(metric)
            # None: no result yet (no unit evaluated), which is not a claim that failed
            met = None if actual is None else bool(OPS[op](actual, target))
            results.append(Claim(metric=metric, op=op, value=target, actual=actual, met=met))
    return results


def _mean_std(values: list[float]) -> MeanStd:
    if not values:
        return MeanStd()
    from runner.report import stats  # NumPy/SciPy: not needed by `validate` (EXPECT_METRICS)

    m, s = stats.mean_std(values)
    return MeanStd(mean=m, std=s)


def summarize_variant(
    run_dir: Path,
    name: str,
    overrides: dict[str, Any],
    seeds: list[int],
    config: Manifest,
    expect: dict[str, Any],
) -> VariantSummary:
    units: dict[str, UnitSummary] = {}
    per_seed: dict[str, float] = {}
    walls, rates, ttr = [], [], {}
    levels = config.eval.reward_levels
    for seed in seeds:
        unit_dir = UnitRef(name, seed).dir(run_dir)
        status = read_status(unit_dir)
        ev = read_eval(unit_dir / EVAL_FILE)  # its mean as its episodes give it
        units[str(seed)] = UnitSummary(
            state=status.state,
            error=status.error,
            eval_mean=ev.mean if ev else None,
            eval_std=ev.std if ev else None,
            wall_time_s=status.train_wall_time_s,
            unit_wall_time_s=status.wall_time_s,  # env start-up, eval: all segments
            train_steps_per_s=status.train_steps_per_s,
        )
        if status.state == "done" and ev:
            per_seed[str(seed)] = ev.mean
        if status.train_wall_time_s is not None and status.train_steps_per_s is not None:
            walls.append(status.train_wall_time_s)
            rates.append(status.train_steps_per_s)
        if levels and (unit_dir / TB_DIR).exists():
            ttr[str(seed)] = _time_to_reward(unit_dir, levels, train_origin(status))
    means = list(per_seed.values())
    from runner.report import stats

    m, s = stats.mean_std(means) if means else (None, None)
    iqm, lo, hi = stats.iqm_ci(means) if means else (None, None, None)
    variant = VariantSummary(
        overrides=overrides,
        units=units,
        eval=EvalSummary(
            per_seed_mean=per_seed,
            mean=m,
            std=s,
            iqm=iqm,
            iqm_ci95=[lo, hi] if means else None,
            n_seeds=len(means),
        ),
        wall_time_s=_mean_std(walls),
        train_steps_per_s=_mean_std(rates),
        time_to_reward=_time_to_reward_summary(ttr, levels),
        missing=[s for s in seeds if str(s) not in per_seed],
    )
    variant.expect = check_expectations(variant, expect) if expect else []
    return variant


def _time_to_reward_summary(ttr: dict[str, Any], levels: list[float]) -> dict[str, Reach]:
    out = {}
    for level in levels:
        per_seed = {s: v.get(str(level)) for s, v in ttr.items() if "error" not in v}
        reached = [t for t in per_seed.values() if t is not None]
        out[str(level)] = Reach(
            per_seed=per_seed,
            mean_s=sum(reached) / len(reached) if reached else None,
            reached=len(reached),
        )
    return out


def write_summary(run_dir: Path, resolved: ResolvedRun) -> RunSummary:
    summary = summarize(run_dir, resolved)
    write_summary_record(run_dir, summary)
    return summary


def recorded_summary(run_dir: Path, resolved: ResolvedRun) -> RunSummary | None:
    """summary.json as the runner wrote it, when nothing it summarises has changed since: it is
    at least as new as resolved.yaml and every unit's status.json and eval.json (a resumed or
    re-evaluated unit rewrites them), it is whole (`record.summary`), and it names this run and
    exactly its variants and seeds. None otherwise (the caller summarises again)."""
    path = run_dir / SUMMARY_FILE
    sources = [run_dir / "resolved.yaml"]
    for unit in resolved.units():
        sources += [unit.dir(run_dir) / STATUS_FILE, unit.dir(run_dir) / EVAL_FILE]
    try:
        written = path.stat().st_mtime_ns
        if any(p.exists() and p.stat().st_mtime_ns > written for p in sources):
            return None
    except OSError:
        return None
    data = read_summary(run_dir)
    seeds = sorted(str(s) for s in resolved.seeds)
    if not (
        data is not None
        and data.name == resolved.name
        and data.run_id == run_dir.name
        and sorted(data.variants) == sorted(resolved.variants)
        and all(
            sorted(v.units) == seeds and all(u.state for u in v.units.values())
            for v in data.variants.values()
        )  # fmt: skip
    ):
        return None
    return data


def summarize(run_dir: Path, resolved: ResolvedRun) -> RunSummary:
    """summary.json's content, from the unit files; writes nothing."""
    expect = {metric: dict(claims) for metric, claims in resolved.expect.items()}
    variants = {
        name: summarize_variant(run_dir, name, v.overrides, resolved.seeds, v.config, expect)
        for name, v in resolved.variants.items()
    }
    return RunSummary(
        name=resolved.name,
        run_id=run_dir.name,
        seeds=resolved.seeds,
        written=time.time(),
        variants=variants,
        expectations_met=claims_met([c for v in variants.values() for c in v.expect]),
        complete=not any(v.missing for v in variants.values()),
    )
