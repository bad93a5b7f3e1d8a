"""summary.json: per variant, per-seed eval, across-seed statistics, timings, expectations."""

from __future__ import annotations

import operator
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.record.eval import read_eval
from runner.record.rundir import UnitRef, write_json_atomic
from runner.record.status import UnitStatus, read_status
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


def metric_values(variant: dict[str, Any]) -> dict[str, float | None]:
    """Each of EXPECT_METRICS for one variant of summary.json."""
    ev = variant["eval"]
    return {
        "eval.mean_reward": ev.get("mean"),
        "eval.std_reward": ev.get("std"),
        "eval.iqm": ev.get("iqm"),
        "eval.iqm_ci_low": (ev.get("iqm_ci95") or [None])[0],
        "eval.min_seed_reward": min(ev["per_seed_mean"].values())
        if ev.get("per_seed_mean")
        else None,
        "train.steps_per_s": variant["train_steps_per_s"].get("mean"),
        "train.wall_time_s": variant["wall_time_s"].get("mean"),
    }


def check_expectations(
    variant: dict[str, Any], expect: dict[str, dict[str, float]]
) -> list[dict[str, Any]]:
    values = metric_values(variant)
    results = []
    for metric, claims in expect.items():
        for op, target in claims.items():
            actual = values.get(metric)
            # None: no result yet (no unit evaluated), which is not a claim that failed
            met = None if actual is None else bool(OPS[op](actual, target))
            results.append(
                {"metric": metric, "op": op, "value": target, "actual": actual, "met": met}
            )
    return results


def claims_met(claims: list[dict[str, Any]]) -> bool | None:
    """False if a claim fails; None if none fails but some have no result yet; else True."""
    met = [c.get("met") for c in claims]
    return False if False in met else (None if None in met else True)


def _mean_std(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "std": None}
    from runner.report import stats  # NumPy/SciPy: not needed by `validate` (EXPECT_METRICS)

    m, s = stats.mean_std(values)
    return {"mean": m, "std": s}


def summarize_variant(
    run_dir: Path,
    name: str,
    overrides: dict[str, Any],
    seeds: list[int],
    config: Manifest,
    expect: dict[str, Any],
) -> dict[str, Any]:
    units: dict[str, Any] = {}
    per_seed: dict[str, float] = {}
    walls, rates, ttr = [], [], {}
    levels = config.eval.reward_levels
    for seed in seeds:
        unit_dir = UnitRef(name, seed).dir(run_dir)
        status = read_status(unit_dir)
        ev = read_eval(unit_dir / EVAL_FILE)  # its mean as its episodes give it
        units[str(seed)] = {
            "state": status.state,
            "error": status.error,
            "eval_mean": ev.mean if ev else None,
            "eval_std": ev.std if ev else None,
            "wall_time_s": status.train_wall_time_s,
            "unit_wall_time_s": status.wall_time_s,  # env start-up, eval: all segments
            "train_steps_per_s": status.train_steps_per_s,
        }
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
    variant = {
        "overrides": overrides,
        "units": units,
        "eval": {
            "per_seed_mean": per_seed,
            "mean": m,
            "std": s,
            "iqm": iqm,
            "iqm_ci95": [lo, hi] if means else None,
            "n_seeds": len(means),
        },
        "wall_time_s": _mean_std(walls),
        "train_steps_per_s": _mean_std(rates),
        "time_to_reward": _time_to_reward_summary(ttr, levels),
        "missing": [s for s in seeds if str(s) not in per_seed],
    }
    variant["expect"] = check_expectations(variant, expect) if expect else []
    return variant


def _time_to_reward_summary(ttr: dict[str, Any], levels: list[float]) -> dict[str, Any]:
    out = {}
    for level in levels:
        per_seed = {s: v.get(str(level)) for s, v in ttr.items() if "error" not in v}
        reached = [t for t in per_seed.values() if t is not None]
        out[str(level)] = {
            "per_seed": per_seed,
            "mean_s": sum(reached) / len(reached) if reached else None,
            "reached": len(reached),
        }
    return out


def write_summary(run_dir: Path, resolved: ResolvedRun) -> dict[str, Any]:
    summary = summarize(run_dir, resolved)
    write_json_atomic(run_dir / "summary.json", summary)
    return summary


def recorded_summary(run_dir: Path, resolved: ResolvedRun) -> dict[str, Any] | None:
    """summary.json as the runner wrote it, when nothing it summarises has changed since: it is
    at least as new as resolved.yaml and every unit's status.json and eval.json (a resumed or
    re-evaluated unit rewrites them), and it names this run and exactly its variants and seeds.
    None otherwise (the caller summarises again). The file is data: only its shape is read."""
    from runner.record.rundir import read_json

    path = run_dir / "summary.json"
    sources = [run_dir / "resolved.yaml"]
    for unit in resolved.units():
        sources += [unit.dir(run_dir) / "status.json", unit.dir(run_dir) / EVAL_FILE]
    try:
        written = path.stat().st_mtime_ns
        if any(p.exists() and p.stat().st_mtime_ns > written for p in sources):
            return None
    except OSError:
        return None
    data = read_json(path)
    seeds = sorted(str(s) for s in resolved.seeds)
    if not (
        isinstance(data, dict)
        and data.get("name") == resolved.name
        and data.get("run_id") == run_dir.name
        and isinstance(data.get("variants"), dict)
        and sorted(data["variants"]) == sorted(resolved.variants)
        and all(
            isinstance(v, dict) and isinstance(v.get("units"), dict) and sorted(v["units"]) == seeds
            for v in data["variants"].values()
        )
        and all(
            isinstance(u, dict) and isinstance(u.get("state"), str)
            for v in data["variants"].values()
            for u in v["units"].values()
        )
    ):
        return None
    return data


def summarize(run_dir: Path, resolved: ResolvedRun) -> dict[str, Any]:
    """summary.json's content, from the unit files; writes nothing."""
    expect = {metric: dict(claims) for metric, claims in resolved.expect.items()}
    variants = {
        name: summarize_variant(run_dir, name, v.overrides, resolved.seeds, v.config, expect)
        for name, v in resolved.variants.items()
    }
    summary = {
        "name": resolved.name,
        "run_id": run_dir.name,
        "seeds": resolved.seeds,
        "written": time.time(),
        "variants": variants,
        "expectations_met": claims_met([c for v in variants.values() for c in v["expect"]]),
        "complete": not any(v["missing"] for v in variants.values()),
    }
    return summary
