"""The numbers a report shows: per-variant eval statistics, paired rows, time to reward levels."""

from __future__ import annotations

from typing import Any

import numpy as np

from runner.report import plots, stats
from runner.report.load import Run
from runner.report.tb import Curve, time_to_reach

AUTO_LEVELS = (0.5, 0.9)  # fractions of the way from the start to the reward every variant reached


def eval_rows(run: Run) -> list[dict[str, Any]]:
    """Per variant: per-seed means, across-seed mean/std, IQM with 95% CI, seeds missing."""
    rows = []
    for variant in run.variants:
        done = {s: run.units[variant, s] for s in run.seeds if run.units[variant, s].eval}
        per_seed = {s: u.eval.mean for s, u in done.items() if u.eval is not None}
        per_seed_std = {s: u.eval.std for s, u in done.items() if u.eval is not None}
        mean, std = stats.mean_std(list(per_seed.values()))
        point, low, high = stats.iqm_ci(list(per_seed.values())) if per_seed else (np.nan,) * 3
        rows.append(
            {
                "variant": variant,
                "name": variant,
                "per_seed": per_seed,
                "per_seed_std": per_seed_std,
                "mean": mean,
                "std": std,
                "iqm": point,
                "iqm_ci95": (low, high),
                "n_seeds": len(per_seed),
                "missing": [s for s in run.seeds if s not in per_seed],
            }
        )
    return rows


def varied_field(run: Run) -> str | None:
    """The one field the matrix varies (or 'variant' for an explicit list), else None."""
    matrix = run.manifest.get("matrix")
    if isinstance(matrix, list) and len(matrix) > 1:
        return "variant"
    keys = {k for o in run.variants.values() for k in o}
    if isinstance(matrix, dict) and len(matrix) == 1:
        return next(iter(matrix))
    return next(iter(keys)) if len(keys) == 1 and len(run.variants) > 1 else None


def paired_rows(baseline: dict[int, float], others: dict[str, dict[int, float]]) -> list[dict]:
    return [{"variant": v, **stats.paired_differences(baseline, o)} for v, o in others.items()]


def best_counts(per_seed: dict[str, dict[int, float]], seeds: list[int]) -> dict[str, int]:
    """On how many seeds (that every variant finished) each variant had the best return."""
    common = [s for s in seeds if all(s in p for p in per_seed.values())]
    wins = dict.fromkeys(per_seed, 0)
    for s in common:
        top = max(p[s] for p in per_seed.values())
        for v, p in per_seed.items():
            wins[v] += p[s] == top
    return wins


def reward_levels(run: Run, groups: dict[str, list[Curve]]) -> tuple[list[float], bool]:
    """The manifest's eval.reward_levels, else levels every variant's mean curve reached."""
    given = (run.manifest.get("eval") or {}).get("reward_levels") or []
    if given:
        return [float(x) for x in given], False
    means = [
        plots.mean_band([c.steps for c in cs], [c.values for c in cs])[1]
        for cs in groups.values()
        if cs
    ]
    if not means:
        return [], True
    start, top = min(float(m[0]) for m in means), min(float(m.max()) for m in means)
    if top <= start:
        return [], True
    return [float(f"{start + f * (top - start):.3g}") for f in AUTO_LEVELS], True


def time_to_levels(curves: list[Curve], levels: list[float]) -> dict[float, dict[str, Any]]:
    out = {}
    for level in levels:
        hits = [t for t in (time_to_reach(c, level) for c in curves) if t is not None]
        secs, steps = [s for s, _ in hits], [n for _, n in hits]
        out[level] = {
            "reached": len(secs),
            "of": len(curves),
            "mean_s": stats.mean_std(secs),
            "mean_steps": stats.mean_std(steps),
        }
    return out


def curve_groups(run: Run) -> dict[str, list[Curve]]:
    """Per variant, the curves of finished units (all units' curves while none finished)."""
    groups: dict[str, list[Curve]] = {}
    for v in run.variants:
        units = [run.units[v, s] for s in run.seeds if run.units[v, s].curve is not None]
        done = [u for u in units if u.state == "done"]
        groups[v] = [u.curve for u in (done or units) if u.curve is not None]
    return groups
