"""Planning a bench: the validated sweep points (`runner.checks.sweep`), labelled and plotted."""

from __future__ import annotations

from typing import Any

from runner.checks.sweep import Point
from runner.checks.sweep import points as sweep_points
from runner.manifest.schema import Manifest


def _label(variant: str, overrides: dict[str, Any], many_variants: bool) -> str:
    # `parallel.workers=2`, never a bare `2`: a table row must say which setting it measured
    text = ", ".join(f"{k}={v}" for k, v in overrides.items())
    if many_variants or not text:
        return f"{variant}: {text}" if text else variant
    return text


def plan(manifest: Manifest) -> list[Point]:
    """Every distinct (variant, sweep point) config, all validated before anything runs (see
    `runner.checks.sweep`), labelled for tables and plots."""
    from runner.manifest.matrix import expand

    points = sweep_points(manifest)
    names = {p.variant for p in points}
    variants = expand(manifest)
    shared = [v.name for v in variants if v.name not in names]
    if shared:  # the sweep overrides what the matrix varies: their points coincide
        measured = ", ".join(sorted(names))
        note = (
            f"variants {', '.join(shared)}: every sweep point coincides with one of variant(s) "
            f"{measured} (the sweep sets what the matrix varies), so it was measured once"
        )
        if len(names) == 1:
            note = (
                f"the sweep sets what the matrix varies: all {len(variants)} variants share "
                "these points, so each point was measured once, as one series"
            )
        for p in points:
            p.note = note
    for p in points:
        if len(names) == 1:
            p.variant = "default"
        p.label = _label(p.variant, p.overrides, len(names) > 1)
    return points


def axis_info(manifest: Manifest, points: list[Point]) -> dict[str, Any]:
    """How to plot the sweep: numeric (log2 when the values span >= 4x) or categorical."""
    sweep = manifest.bench.sweep
    if len(sweep) != 1:
        return {"label": " × ".join(sweep) or "variant", "numeric": False, "log2": False}
    path, values = next(iter(sweep.items()))
    numeric = (
        all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values)
        and len(values) > 1
    )
    log2 = numeric and max(values) / min(values) >= 4
    return {"label": path, "numeric": numeric, "log2": bool(log2)}
