"""Figures for reports and benchmarks (matplotlib, Agg backend, PNG files).

Every figure has a title, axis labels with units and a legend; long labels go in a legend below
the axes rather than on them, so nothing overlaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runner.report.tb import Curve


def load_matplotlib() -> Any:
    """Matplotlib's `Figure`, imported with its own notices kept off the user's terminal:
    "building the font cache" and "created a temporary cache directory" (an unwritable HOME) are
    logged as warnings, and Python prints unhandled warnings to stderr."""
    import logging

    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    from matplotlib.figure import Figure

    return Figure


def subplots(*grid: int, figsize: tuple[float, float], **kw: Any) -> tuple[Any, Any]:
    """(figure, axes) as pyplot's `subplots` makes them, from matplotlib's object interface:
    pyplot (its backends, its figure registry) costs a short run a second to import and nothing
    here shows a window."""
    fig = load_matplotlib()(figsize=figsize, layout=kw.pop("layout", None))
    return fig, fig.subplots(*grid, **kw)


def colormap(name: str) -> Any:
    import matplotlib

    return matplotlib.colormaps[name]


def _save(fig: Any, path: Path) -> Path:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.png")
    try:  # via a temporary name: a full disk never leaves half a PNG
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _nothing(path: Path) -> None:
    """Nothing to draw: an older drawing at `path` goes too (a report never shows a figure its
    run's files no longer give)."""
    path.unlink(missing_ok=True)


def mean_band(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], points: int = 200):
    """Mean and std across seeds on a common grid, over the x range every curve covers.

    Returns (grid, mean, std); std is None with a single curve.
    """
    hi = min(float(x[-1]) for x in xs)
    lo = max(float(x[0]) for x in xs)
    # Single points or disjoint ranges leave nothing common to average over but one point.
    grid = np.array([hi]) if hi <= lo else np.linspace(lo, hi, points)
    stack = np.stack([np.interp(grid, x, y) for x, y in zip(xs, ys, strict=True)])
    std = stack.std(axis=0, ddof=1) if len(xs) > 1 else None
    return grid, stack.mean(axis=0), std


def learning_curves(groups: dict[str, list[Curve]], path: Path, *, title: str) -> Path | None:
    """Episode reward mean vs env steps and vs wall time; mean across seeds, band +-1 std."""
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        _nothing(path)
        return None
    fig, axes = subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    ends: dict[int, list[Any]] = {0: [], 1: []}  # per panel, the dotted "mean ends" lines
    for i, (label, curves) in enumerate(groups.items()):
        color = f"C{i % 10}"
        for k, (ax, xkey) in enumerate(zip(axes, ("steps", "wall_s"), strict=True)):
            xs = [getattr(c, xkey) for c in curves]
            ys = [c.values for c in curves]
            grid, mean, std = mean_band(xs, ys)
            ax.plot(grid, mean, color=color, lw=1.8, label=f"{label} (n={len(curves)})")
            if std is not None:
                ax.fill_between(grid, mean - std, mean + std, color=color, alpha=0.2, lw=0)
            unit = " s" if xkey == "wall_s" else " steps"
            end = _seeds_beyond_mean(ax, xs, ys, float(grid[-1]), color, f"{label}: ", unit)
            ends[k] += [end] if end is not None else []
    for k, lines in ends.items():
        if lines:  # in a legend of its own, placed where it covers the least data: labels at
            # the dotted lines overlap each other and the curves where means end close together
            axes[k].legend(handles=lines, loc="best", fontsize=8, title="mean ends (dotted)",
                           title_fontsize=8)  # fmt: skip
    cut = any(ends.values())
    axes[0].set_xlabel("environment steps")
    axes[1].set_xlabel("wall-clock time since training started (s)")
    for ax, what in zip(axes, ("steps", "wall time"), strict=True):
        ax.set_ylabel("episode reward mean (rollout/ep_rew_mean)")
        ax.set_title(f"vs {what}")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3), fontsize=9)
    note = (
        "\nthin: each seed to its own end; dotted: the mean stops where the shortest seed ends"
        if cut
        else ""
    )
    fig.suptitle(f"{title}: learning curves (line: mean across seeds, band: ±1 std){note}")
    return _save(fig, path)


def _seeds_beyond_mean(
    ax: Any,
    xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    end: float,
    color: str,
    label: str,
    unit: str,
) -> Any:
    """Where a seed runs on past the mean (the mean covers only the range every seed reaches,
    so on wall time it stops at the fastest seed): draw each seed in full, thin, and a dotted
    line where the mean ends, labelled `mean ends` for the panel's legend. The line, or None
    when nothing was drawn."""
    if len(xs) < 2 or max(float(x[-1]) for x in xs) <= end * 1.01:
        return None
    for x, y in zip(xs, ys, strict=True):
        ax.plot(x, y, color=color, lw=0.7, alpha=0.45)
    return ax.axvline(end, color=color, ls=":", lw=1.2, label=f"{label}{_si(end)}{unit}")


def eval_points(rows: list[dict[str, Any]], path: Path, *, title: str) -> Path | None:
    """Per-seed evaluation returns (dots) and IQM with its 95% bootstrap CI per variant."""
    rows = [r for r in rows if r["per_seed"]]
    if not rows:
        _nothing(path)
        return None
    fig, ax = subplots(figsize=(max(5.0, 1.4 * len(rows) + 2), 4.5), layout="constrained")
    for i, row in enumerate(rows):
        vals = list(row["per_seed"].values())
        jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else [0.0]
        ax.scatter(
            i + np.asarray(jitter),
            vals,
            color=f"C{i % 10}",
            alpha=0.7,
            s=22,
            label="per-seed mean return" if i == 0 else None,
        )
        if len(vals) < 2:  # one seed: no interval to draw
            continue
        lo, hi = row["iqm_ci95"]
        ax.errorbar(
            [i + 0.3],
            [row["iqm"]],
            yerr=[[row["iqm"] - lo], [hi - row["iqm"]]],
            fmt="D",
            color="black",
            capsize=4,
            ms=5,
            label="IQM, 95% bootstrap CI" if i == 0 else None,
        )
    ticks, key = short_labels([r["variant"] for r in rows])
    ax.set_xticks(range(len(rows)), [_wrap(t) for t in ticks], fontsize=9)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylabel("evaluation return (mean over episodes)")
    ax.set_xlabel(f"variant ({key})" if key else "variant")
    ax.set_title(f"{title}: evaluation across seeds")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=9, loc="best")
    return _save(fig, path)


def _wrap(label: str, width: int = 18) -> str:
    """Wrap at '=', ',' and spaces (never inside a dotted path) so tick labels stay narrow."""
    parts = label.replace("=", "=\x00").replace(", ", ", \x00").replace(" ", " \x00").split("\x00")
    lines = [""]
    for part in parts:
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(line.strip() for line in lines)


def short_labels(labels: list[str]) -> tuple[list[str], str | None]:
    """Drop a shared 'path=' prefix: (['32', '64'], 'a.b') from ['a.b=32', 'a.b=64']."""
    keys = {lb.split("=", 1)[0] for lb in labels}
    if len(labels) > 1 and len(keys) == 1 and all("=" in lb and "," not in lb for lb in labels):
        return [lb.split("=", 1)[1] for lb in labels], keys.pop()
    return labels, None


def _si(x: float) -> str:
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


METRICS = (
    ("env_only", "env-only (random actions)", "o"),
    ("inference", "env + policy inference", "^"),
    ("train", "training", "s"),
)


def scaling(bench: dict[str, Any], path: Path) -> Path | None:
    """Steps/s per sweep point: both curves with min-max bars, ideal scaling for reference."""
    points = [p for p in bench.get("points", []) if not p.get("error")]
    if not points:
        return None
    if bench.get("axis", {}).get("numeric"):
        return _scaling_lines(bench, points, path)
    return _scaling_bars(bench, points, path)


IDEAL_MAX_SERIES = 3  # beyond this many series the ideal lines are left out


def _series(points: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        out.setdefault(p.get("variant") or "", []).append(p)
    return out


def _scaling_lines(bench: dict[str, Any], points: list[dict[str, Any]], path: Path) -> Path:
    """One panel per metric measured (env-only, env + inference, training), side by side, one
    colour per variant; the ideal linear line from each series' first point is drawn while there
    are few series (it clutters beyond)."""
    axis = bench["axis"]
    series = _series(points)
    ideal = len(series) <= IDEAL_MAX_SERIES
    metrics = _measured(points)
    fig, axes = subplots(
        1, len(metrics), figsize=(4 + 3.6 * len(metrics), 4.8), sharey=True,
        layout="constrained", squeeze=False,
    )  # fmt: skip
    xs_all = sorted({float(p["x"]) for p in points})
    for ax, (key, name, marker) in zip(axes[0], metrics, strict=True):
        for si, (variant, pts) in enumerate(series.items()):
            if not all(p.get(key) for p in pts):
                continue
            xs = np.array([float(p["x"]) for p in pts])
            med = np.array([p[key]["steps_per_s"]["median"] for p in pts])
            err = [
                med - [p[key]["steps_per_s"]["min"] for p in pts],
                [p[key]["steps_per_s"]["max"] for p in pts] - med,
            ]
            color = f"C{si % 10}"
            label = variant if len(series) > 1 else name
            ax.errorbar(xs, med, yerr=err, marker=marker, color=color, capsize=3, label=label)
            if ideal:
                ax.plot(xs, med[0] * xs / xs[0], ls=":", color=color, alpha=0.7)
            flat = bench.get("flatten", {}).get(variant or "", {}).get(key)
            if ideal and flat and flat.get("x") is not None:
                k = [p["x"] for p in pts].index(flat["x"])
                ax.annotate(
                    "flattens",
                    (xs[k], med[k]),
                    xytext=(0, -18),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    color=color,
                )
        if axis.get("log2"):
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs_all, [f"{x:g}" for x in xs_all])
        ax.set_yscale("log")
        ax.set_xlabel(axis["label"] + (" (log₂ scale)" if axis.get("log2") else ""))
        ax.set_title(name)
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("env steps per second (log scale)")
    fig.suptitle(
        f"{bench.get('name', '')}: throughput vs {axis['label']} (median of repeats, bars: "
        "min–max" + ("; dotted: ideal linear scaling)" if ideal else ")")
    )
    if len(series) > 1:  # one series: each panel's title names what it shows
        handles, labels = axes[0][-1].get_legend_handles_labels()
        if not handles:
            handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right center", fontsize=8)
    return _save(fig, path)


def _measured(points: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The metrics some point has (a trainer that cannot separate inference has none)."""
    return [m for m in METRICS if any(p.get(m[0]) for p in points)] or list(METRICS[:1])


def _scaling_bars(bench: dict[str, Any], points: list[dict[str, Any]], path: Path) -> Path:
    labels = [p["label"] for p in points]
    metrics = _measured(points)
    fig, ax = subplots(
        figsize=(max(6.0, (1.1 * len(metrics) + 0.6) * len(points) + 2), 5.2), layout="constrained"
    )
    width = 0.8 / len(metrics)
    for mi, (key, name, _) in enumerate(metrics):
        idx = [i for i, p in enumerate(points) if p.get(key)]
        if not idx:
            continue
        med = np.array([points[i][key]["steps_per_s"]["median"] for i in idx])
        lo = med - [points[i][key]["steps_per_s"]["min"] for i in idx]
        hi = [points[i][key]["steps_per_s"]["max"] for i in idx] - med
        xs = np.array(idx) + (mi - (len(metrics) - 1) / 2) * width
        ax.bar(xs, med, width, yerr=[lo, hi], capsize=3, color=f"C{mi}", label=name)
        base = med[0]
        for x, m, top in zip(xs, med, med + hi, strict=True):
            ax.annotate(  # above the min-max bar, so the text never sits on it
                f"{_si(m)}/s\n×{m / base:.3g}" if base > 0 else f"{_si(m)}/s",
                (x, top),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.set_yscale("log")
    ax.set_xticks(range(len(points)), [_wrap(lb, 24) for lb in labels], fontsize=9)
    ax.set_ylabel("steps per second (env steps/s, log scale)")
    ax.set_xlabel(bench.get("axis", {}).get("label", "configuration"))
    ymax = max(p[k]["steps_per_s"]["max"] for p in points for k, _, _ in METRICS if p.get(k))
    ax.set_ylim(top=ymax * 4)  # room for the value labels above the bars
    ax.set_title(
        f"{bench.get('name', '')}: throughput per configuration\n"
        "median of repeats, bars: min–max; ×: ratio to the first configuration"
    )
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=9, loc="upper left")
    return _save(fig, path)
