"""Analysing a bench: speed-ups, parallel efficiency, where the gain flattens, findings.

Where the gain flattens: parallel efficiency at sweep value x is
    (steps/s at x / steps/s at x0) / (x / x0)
against the first (smallest) value x0; the gain "flattens" at the first point whose efficiency
drops below FLATTEN_EFFICIENCY (0.5: doubling the envs no longer buys even half of the ideal
speed-up). Categorical sweeps (modes, backends) report each point's ratio to the first.
"""

from __future__ import annotations

from typing import Any

from runner.run.bench import split

FLATTEN_EFFICIENCY = 0.5
RATES = ("env_only", "inference", "train")  # each {"steps_per_s": ..., "steps": N} or None


def _efficiencies(pts: list[dict[str, Any]], key: str, numeric: bool) -> None:
    base = pts[0].get(key)
    for p in pts:
        cur = p.get(key)
        if not (base and cur):
            continue
        speedup = cur["steps_per_s"]["median"] / base["steps_per_s"]["median"]
        p.setdefault("speedup", {})[key] = speedup
        if numeric:
            p.setdefault("efficiency", {})[key] = speedup / (float(p["x"]) / float(pts[0]["x"]))


def analyse(bench: dict[str, Any]) -> None:
    """Speed-ups against each series' first point, efficiency, where the gain flattens, findings."""
    numeric = bench["axis"]["numeric"]
    series: dict[str, list[dict[str, Any]]] = {}
    for p in bench["points"]:
        if not p["error"]:
            series.setdefault(p["variant"], []).append(p)
    if not numeric:  # categorical: every point against the very first one
        series = {"": [p for p in bench["points"] if not p["error"]]}
    findings: list[str] = []
    flatten: dict[str, dict[str, Any]] = {}
    for variant, pts in series.items():
        if not pts:  # every point failed: nothing to compare
            continue
        if numeric:
            pts.sort(key=lambda p: float(p["x"]))
        for key in RATES:
            _efficiencies(pts, key, numeric)
            if numeric and len(pts) > 1:
                flatten.setdefault(variant, {})[key] = _flatten(pts, key)
                findings += _flatten_text(bench, variant, key, pts, flatten[variant][key])
            elif len(pts) > 1:
                findings += [
                    f"{name(key)} steps/s: {p['label']} is ×{p['speedup'][key]:.2f} "
                    f"{pts[0]['label']}{_support(pts[0], p, key)}"
                    for p in pts[1:]
                    if key in p.get("speedup", {})
                ]
    for p in bench["points"]:
        line = split.sentence(p) if not p["error"] else None
        findings += ([line] if line else []) + _cold(p)
    bench["flatten"] = flatten
    bench["findings"] = findings


def _support(a: dict[str, Any], b: dict[str, Any], key: str) -> str:
    """What the repeats say of a ratio between two points: nothing to add when their ranges are
    apart; otherwise that the difference is within the spread, or that none was measured."""
    ra, rb = split.rate(a, key), split.rate(b, key)
    if ra is None or rb is None:
        return ""
    if min(split.repeats(a, key), split.repeats(b, key)) < 2:
        return " (one repeat: no spread measured)"
    if not split.apart(ra, rb):
        return " (within the repeats' spread: no measurable difference)"
    return ""


def name(key: str) -> str:
    return {"env_only": "env-only", "inference": "env + inference", "train": "training"}[key]


def _median(p: dict[str, Any], key: str) -> float | None:
    m = p.get(key)
    return float(m["steps_per_s"]["median"]) if m else None


def _cold(p: dict[str, Any]) -> list[str]:
    cold = p.get("cold_start")
    if not cold:
        return []
    return [f"{p['label']}: cold start {cold['seconds']:.1f} s (a fresh process to its first step)"]


def _flatten(pts: list[dict[str, Any]], key: str) -> dict[str, Any]:
    for p in pts[1:]:
        eff = p.get("efficiency", {}).get(key)
        if eff is not None and eff < FLATTEN_EFFICIENCY:
            return {"x": p["x"], "efficiency": eff, "threshold": FLATTEN_EFFICIENCY}
    return {"x": None, "efficiency": None, "threshold": FLATTEN_EFFICIENCY}


def _flatten_text(
    bench: dict[str, Any], variant: str, key: str, pts: list[dict[str, Any]], flat: dict[str, Any]
) -> list[str]:
    path, last = bench["axis"]["label"], pts[-1]
    who = f"{variant}, " if len(bench.get("variants", [])) > 1 else ""
    if key not in last.get("speedup", {}):
        return []
    head = (
        f"{who}{name(key)} steps/s: ×{last['speedup'][key]:.2f} from {path}={pts[0]['x']} "
        f"to {last['x']} (efficiency {last['efficiency'][key]:.3g})"
    )
    one = min(split.repeats(p, key) for p in pts) < 2
    note = " (one repeat: no spread measured)" if one else ""
    if flat["x"] is None:
        return [f"{head}; keeps scaling (efficiency ≥ {FLATTEN_EFFICIENCY} throughout){note}"]
    at = next(p for p in pts if p["x"] == flat["x"])
    if _could_keep_scaling(pts[0], at, key):
        return [
            f"{head}; by the medians the gain flattens at {path}={flat['x']} (efficiency "
            f"{flat['efficiency']:.3g} < {FLATTEN_EFFICIENCY}), but within the repeats' spread "
            "it may not"
        ]
    return [
        f"{head}; the gain flattens at {path}={flat['x']} (efficiency "
        f"{flat['efficiency']:.3g} < {FLATTEN_EFFICIENCY}){note}"
    ]


def _could_keep_scaling(first: dict[str, Any], at: dict[str, Any], key: str) -> bool:
    """Whether the best case the repeats allow (the fastest run at `at` against the slowest at
    the first point) still scales with efficiency FLATTEN_EFFICIENCY or more."""
    ra, rb = split.rate(first, key), split.rate(at, key)
    if ra is None or rb is None or min(split.repeats(first, key), split.repeats(at, key)) < 2:
        return False
    best = (rb.high / ra.low) / (float(at["x"]) / float(first["x"]))
    return best >= FLATTEN_EFFICIENCY


def add_overhead(bench: dict[str, Any], cost: dict[str, float]) -> None:
    """The harness's cost as a fraction of each measured rate (per vector step)."""
    fractions = {"env_only": 0.0, "inference": 0.0, "train": 0.0}
    per_step = {
        "env_only": cost["loop_s_per_vector_step"],
        "inference": cost["loop_s_per_vector_step"],
        "train": cost["timer_s_per_vector_step"],
    }
    for p in bench["points"]:
        for key in fractions:
            if p.get(key):
                vec_rate = p[key]["steps_per_s"]["median"] / p["envs"]
                fractions[key] = max(fractions[key], per_step[key] * vec_rate)
    bench["overhead"] = {**cost, "max_fraction": fractions}
    bench["findings"].append(
        f"bench overhead (timing loop / step timer): at most {100 * fractions['env_only']:.2f}% "
        f"of env-only and {100 * fractions['train']:.2f}% of training steps/s"
    )
