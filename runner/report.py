"""Reports from a run directory: report.md, plots/*.png and a LaTeX eval table.

Everything is read back from the files a run leaves (status.json, eval.json, TensorBoard events,
summary.json, bench.json), so a report can be made for a run that is partial, failed or still
going: what is there is reported, what is missing is listed, unreadable files are named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from runner import plots, stats
from runner.errors import UserInputError
from runner.plots import Curve

REWARD_TAG = "rollout/ep_rew_mean"
AUTO_LEVELS = (0.5, 0.9)  # fractions of the way from the start to the reward every variant reached


@dataclass
class Unit:
    variant: str
    seed: int
    state: str = "missing"
    error: str | None = None
    eval: dict[str, Any] | None = None
    curve: Curve | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class Run:
    path: Path
    name: str
    run_id: str
    seeds: list[int]
    variants: dict[str, dict[str, Any]]  # name -> overrides, in matrix order
    units: dict[tuple[str, int], Unit]
    manifest: dict[str, Any]
    summary: dict[str, Any]
    bench: dict[str, Any] | None
    labels: dict[str, str] = field(default_factory=dict)  # variant -> short display label


def _read_json(path: Path, problems: list[str]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable JSON ({exc})")
        return None
    return data if isinstance(data, dict) else None


def read_curve(tb_dir: Path, tag: str = REWARD_TAG) -> tuple[Curve | None, str | None]:
    """A unit's curve from its TensorBoard events (tensorboard's own reader), or a problem."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    files = sorted(tb_dir.rglob("events.out.tfevents.*")) if tb_dir.is_dir() else []
    if not files:
        return None, f"no TensorBoard event files in {tb_dir}"
    points: list[tuple[float, int, float]] = []
    starts, bad = [], []
    for folder in sorted({f.parent for f in files}):
        acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0})
        acc.Reload()
        try:
            starts.append(acc.FirstEventTimestamp())
        except ValueError:  # not a single event could be read from the folder's files
            bad += [f.name for f in files if f.parent == folder]
            continue
        if tag in acc.Tags().get("scalars", []):
            points += [(e.wall_time, e.step, e.value) for e in acc.Scalars(tag)]
    kind = ""
    if bad:
        empty = all(f.stat().st_size == 0 for f in files if f.name in bad)
        kind = "empty" if empty else "corrupt or unreadable"
    if not points:
        why = f"{kind} event file(s) {', '.join(bad)}" if bad else f"no '{tag}' scalars"
        return None, f"{tb_dir}: {why}"
    points.sort(key=lambda p: p[1])
    wall, steps, values = (np.array(v, dtype=float) for v in zip(*points, strict=True))
    curve = Curve(steps, values, wall - min(starts))
    return curve, (f"{tb_dir}: skipped {kind} event file(s) {', '.join(bad)}" if bad else None)


def _unit(run_dir: Path, variant: str, seed: int) -> Unit:
    unit = Unit(variant, seed)
    udir = run_dir / "units" / variant / f"seed-{seed}"
    if not udir.is_dir():
        return unit
    status = _read_json(udir / "status.json", unit.problems) or {}
    unit.state = str(status.get("state", "unknown"))
    unit.error = status.get("error")
    unit.eval = _read_json(udir / "eval.json", unit.problems)
    if unit.eval is not None and not isinstance(unit.eval.get("mean"), (int, float)):
        unit.problems.append(f"{udir / 'eval.json'}: no 'mean'")
        unit.eval = None
    unit.curve, problem = read_curve(udir / "tb")
    if problem and (udir / "tb").exists():
        unit.problems.append(problem)
    return unit


def load_run(run_dir: Path) -> Run:
    """Everything the report needs from a run directory; raises UserInputError if it is none."""
    run_dir = Path(run_dir)
    markers = ("summary.json", "resolved.yaml", "manifest.yaml", "units", "bench.json")
    if not run_dir.is_dir() or not any((run_dir / m).exists() for m in markers):
        raise UserInputError(
            f"{run_dir} is not a run directory (expected summary.json, resolved.yaml or units/)."
        )
    problems: list[str] = []
    summary = _read_json(run_dir / "summary.json", problems) or {}
    manifest = _read_manifest(run_dir)
    listed = summary.get("variants") or manifest.get("variants") or {}
    variants = {k: dict(v.get("overrides") or {}) for k, v in listed.items()}
    units_dir = run_dir / "units"
    for d in sorted(units_dir.iterdir()) if units_dir.is_dir() else []:
        if d.is_dir():
            variants.setdefault(d.name, {})
    found = {int(p.name[5:]) for p in units_dir.glob("*/seed-*") if p.name[5:].isdigit()}
    seeds = [int(s) for s in summary.get("seeds") or manifest.get("seeds") or sorted(found)]
    units = {(v, s): _unit(run_dir, v, s) for v in variants for s in seeds}
    return Run(
        path=run_dir,
        name=str(summary.get("name") or manifest.get("name") or run_dir.parent.name),
        run_id=str(summary.get("run_id") or run_dir.name),
        seeds=seeds,
        variants=variants,
        units=units,
        manifest=manifest,
        summary=summary,
        bench=_read_json(run_dir / "bench.json", problems),
        labels=plots.display_names(variants),
    )


def _read_manifest(run_dir: Path) -> dict[str, Any]:
    import yaml

    for name in ("resolved.yaml", "manifest.yaml"):
        try:
            data = yaml.safe_load((run_dir / name).read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(data, dict):
            return data
    return {}


def eval_rows(run: Run) -> list[dict[str, Any]]:
    """Per variant: per-seed means, across-seed mean/std, IQM with 95% CI, seeds missing."""
    rows = []
    for variant in run.variants:
        done = {s: run.units[variant, s] for s in run.seeds if run.units[variant, s].eval}
        per_seed = {s: float(u.eval["mean"]) for s, u in done.items()}  # type: ignore[index]
        per_seed_std = {s: float(u.eval.get("std") or 0.0) for s, u in done.items()}  # type: ignore[union-attr]
        mean, std = stats.mean_std(list(per_seed.values()))
        point, low, high = stats.iqm_ci(list(per_seed.values())) if per_seed else (np.nan,) * 3
        rows.append(
            {
                "variant": run.labels.get(variant, variant),
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
        hits = [
            int(np.argmax(c.values >= level)) if (c.values >= level).any() else None for c in curves
        ]
        secs = [float(c.wall_s[i]) for c, i in zip(curves, hits, strict=True) if i is not None]
        steps = [float(c.steps[i]) for c, i in zip(curves, hits, strict=True) if i is not None]
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


# ---- rendering --------------------------------------------------------------------------------


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return lines + [""]


def _eval_section(run: Run, rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "## Evaluation",
        "",
        "Per seed: mean ± std over evaluation episodes. Across seeds: mean ± sample std of "
        "the per-seed means; IQM (interquartile mean) with a 95% percentile bootstrap CI.",
        "",
    ]
    body = []
    for r in rows:
        seeds = ", ".join(
            f"{s}: {_f(m)} ± {_f(r['per_seed_std'][s])}" for s, m in r["per_seed"].items()
        )
        iqm = f"{_f(r['iqm'])} [{_f(r['iqm_ci95'][0])}, {_f(r['iqm_ci95'][1])}]"
        body.append(
            [
                r["variant"],
                seeds or "–",
                f"{_f(r['mean'])} ± {_f(r['std'])}",
                iqm,
                f"{r['n_seeds']}/{len(run.seeds)}",
            ]
        )
    out += _table(
        ["variant", "per seed (seed: mean ± std)", "mean ± std", "IQM [95% CI]", "seeds"], body
    )
    return out


def _paired_section(title: str, base: str, rows: list[dict], best: dict[str, int]) -> list[str]:
    out = [
        f"## {title}",
        "",
        f"Per-seed differences against **{base}** (variant − {base}, evaluation return); "
        "mean with a 95% bootstrap CI; wins = seeds on which the variant beat it.",
        "",
    ]
    body = [
        [
            r["variant"],
            ", ".join(f"{s}: {_f(d)}" for s, d in zip(r["seeds"], r["differences"], strict=True))
            or "–",
            _f(r["mean"]),
            f"[{_f(r['ci95'][0])}, {_f(r['ci95'][1])}]",
            f"{r['wins']}–{r['losses']}–{r['ties']}",
        ]
        for r in rows
    ]
    out += _table(["variant", "per-seed difference", "mean", "95% CI", "wins–losses–ties"], body)
    if best:
        out += [
            "Best return per seed (seeds every variant finished): "
            + ", ".join(f"{v}: {n}" for v, n in best.items()),
            "",
        ]
    return out


def _ttr_section(run: Run, groups: dict[str, list[Curve]]) -> list[str]:
    levels, auto = reward_levels(run, groups)
    if not levels:
        return []
    out = [
        "## Time to reach reward levels",
        "",
        "Wall-clock seconds (and env steps) until `rollout/ep_rew_mean` first reached the "
        "level: mean ± std over the seeds that reached it."
        + (" Levels chosen automatically (set `eval.reward_levels` to fix them)." if auto else ""),
        "",
    ]
    body = []
    for v, curves in groups.items():
        for level, t in time_to_levels(curves, levels).items():
            body.append(
                [
                    v,
                    _f(level),
                    f"{_f(t['mean_s'][0])} ± {_f(t['mean_s'][1])}",
                    f"{_f(t['mean_steps'][0])} ± {_f(t['mean_steps'][1])}",
                    f"{t['reached']}/{t['of']}",
                ]
            )
    return out + _table(["variant", "level", "seconds", "env steps", "seeds reached"], body)


def _expect_section(run: Run) -> list[str]:
    body = [
        [
            run.labels.get(v, v),
            e.get("metric"),
            e.get("op"),
            _f(e.get("value")),
            _f(e.get("actual")),
            "✅ met" if e.get("met") else "❌ not met",
        ]
        for v, data in run.summary.get("variants", {}).items()
        for e in data.get("expect", [])
    ]
    if not body:
        return []
    met = run.summary.get("expectations_met")
    return ["## Expectations", "", f"All met: **{'yes' if met else 'no'}**", ""] + _table(
        ["variant", "metric", "op", "value", "actual", "result"], body
    )


def _load(values: Any) -> str:
    return " ".join(f"{v:.2f}" for v in values) if isinstance(values, list) else "?"


def bench_lines(bench: dict[str, Any], plot: str | None) -> list[str]:
    host = bench.get("host", {})
    out = [
        "## Benchmark",
        "",
        f"CPU: {host.get('cpu_model', '?')}, {host.get('cpu_count', '?')} cores, load average "
        f"{_load(host.get('load_avg_before'))} before / {_load(host.get('load_avg_after'))} after. "
        f"{bench.get('settings', {}).get('steps', '?')} steps per repeat, "
        f"{bench.get('settings', {}).get('repeats', '?')} repeats (median [min–max]).",
        "",
    ]
    body = []
    for p in bench.get("points", []):
        cells = [p.get("label")]
        for key in ("env_only", "train"):
            s = (p.get(key) or {}).get("steps_per_s")
            cells.append(f"{_f(s['median'])} [{_f(s['min'])}–{_f(s['max'])}]" if s else "–")
        frac = (p.get("train") or {}).get("env_fraction")
        cells.append(f"{100 * frac:.0f}%" if frac is not None else "–")
        cells.append(
            _f(p.get("speedup", {}).get("env_only")) + " / " + _f(p.get("speedup", {}).get("train"))
        )
        cells.append(p.get("error") or "")
        body.append(cells)
    out += _table(
        [
            "point",
            "env-only steps/s",
            "training steps/s",
            "training time stepping envs",
            "× first point (env / train)",
            "error",
        ],
        body,
    )
    out += [f"- {line}" for line in bench.get("findings", [])] + [""]
    return out + ([f"![scaling]({plot})", ""] if plot else [])


def _units_section(run: Run) -> list[str]:
    missing = [u for u in run.units.values() if u.eval is None]
    if not missing:
        return [f"All {len(run.units)} units finished and evaluated.", ""]
    out = ["## Missing or incomplete units", ""]
    for u in missing:
        why = f": {u.error}" if u.error else ""
        out.append(f"- `{run.labels.get(u.variant, u.variant)}` seed {u.seed}: {u.state}{why}")
    return out + [""]


def _problems(run: Run) -> list[str]:
    lines = [f"- {p}" for u in run.units.values() for p in u.problems]
    return ["## Files that could not be read", ""] + lines + [""] if lines else []


def write_latex(rows: list[dict[str, Any]], path: Path, caption: str) -> Path:
    """A booktabs table of the evaluation results, ready to \\input into a paper."""

    def esc(s: str) -> str:
        for a, b in (
            ("\\", r"\textbackslash{}"),
            ("&", r"\&"),
            ("%", r"\%"),
            ("$", r"\$"),
            ("#", r"\#"),
            ("_", r"\_"),
            ("{", r"\{"),
            ("}", r"\}"),
        ):
            s = s.replace(a, b)
        return s

    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{esc(caption)}}}",
        r"\begin{tabular}{lrrc}",
        r"\toprule",
        r"Variant & Mean $\pm$ std & IQM [95\% CI] & Seeds \\",
        r"\midrule",
    ]
    for r in rows:
        lo, hi = r["iqm_ci95"]
        lines.append(
            rf"{esc(r['variant'])} & {_f(r['mean'])} $\pm$ {_f(r['std'])} & "
            rf"{_f(r['iqm'])} [{_f(lo)}, {_f(hi)}] & {r['n_seeds']} \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    path.write_text("\n".join(lines))
    return path


def _write_md(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(path)
    return path


def _rel(path: Path | None, root: Path) -> str | None:
    return str(path.relative_to(root)) if path else None


def write_report(run_dir: Path) -> Path:
    """Write report.md, plots/*.png and eval_table.tex into the run directory; return report.md."""
    run = load_run(run_dir)
    root, rows = run.path, eval_rows(run)
    groups = {run.labels.get(v, v): cs for v, cs in curve_groups(run).items()}
    lc = plots.learning_curves(groups, root / "plots/learning_curves.png", title=run.name)
    ev = plots.eval_points(rows, root / "plots/eval.png", title=run.name)
    write_latex(rows, root / "eval_table.tex", f"{run.name}: evaluation return across seeds")
    lines = [
        f"# {run.name} — run {run.run_id}",
        "",
        f"Seeds: {run.seeds}. Variants: {len(run.variants)}. "
        "LaTeX table of the evaluation: `eval_table.tex`.",
        "",
    ]
    if not any(u.state not in ("missing", "pending") or u.eval for u in run.units.values()):
        lines += ["No unit has been trained or evaluated in this run (a bench-only run?).", ""]
        return _write_md(root / "report.md", lines + _bench_section(run))
    lines += _units_section(run) + _eval_section(run, rows)
    lines += [f"![evaluation]({_rel(ev, root)})", ""] if ev else []
    field_ = varied_field(run)
    per_seed = {r["variant"]: r["per_seed"] for r in rows}
    if field_ and len(rows) > 1:
        base, *others = per_seed
        title = f"Paired comparison over `{field_}`"
        lines += _paired_section(
            title,
            base,
            paired_rows(per_seed[base], {v: per_seed[v] for v in others}),
            best_counts(per_seed, run.seeds),
        )
    lines += (
        ["## Learning curves", "", f"![learning curves]({_rel(lc, root)})", ""]
        if lc
        else ["## Learning curves", "", "No readable TensorBoard curves.", ""]
    )
    lines += _ttr_section(run, groups) + _expect_section(run)
    lines += _bench_section(run)
    return _write_md(root / "report.md", lines + _problems(run))


def _bench_section(run: Run) -> list[str]:
    if not run.bench:
        return []
    scaling = run.path / "plots/scaling.png"
    if not scaling.is_file():
        plots.scaling(run.bench, scaling)
    return bench_lines(run.bench, _rel(scaling, run.path) if scaling.is_file() else None)


def compare_runs(a: Path, b: Path, out: Path | None = None) -> Path:
    """Paired comparison of two run directories with the same seeds (B − A); returns compare.md."""
    run_a, run_b = load_run(a), load_run(b)
    if sorted(run_a.seeds) != sorted(run_b.seeds):
        raise UserInputError(
            f"Cannot compare {a} and {b}: their seeds differ ({run_a.seeds} vs {run_b.seeds}); "
            "a paired comparison needs the same seeds in both runs."
        )
    pairs = [(v, v) for v in run_a.variants if v in run_b.variants]
    if not pairs and len(run_a.variants) == 1 and len(run_b.variants) == 1:
        pairs = [(next(iter(run_a.variants)), next(iter(run_b.variants)))]
    if not pairs:
        raise UserInputError(
            f"Cannot compare {a} and {b}: they share no variant "
            f"({', '.join(run_a.variants)} vs {', '.join(run_b.variants)})."
        )
    out = Path(out) if out else run_b.path / f"compare-{run_a.name}-{run_a.run_id}"
    rows_a = {r["name"]: r for r in eval_rows(run_a)}
    rows_b = {r["name"]: r for r in eval_rows(run_b)}
    lines = [
        f"# {run_b.name} ({run_b.run_id}) vs {run_a.name} ({run_a.run_id})",
        "",
        f"A = `{run_a.path}`, B = `{run_b.path}`; seeds {sorted(run_a.seeds)}.",
        "",
    ]
    renamed = [dict(rows_a[va], variant=f"A: {rows_a[va]['variant']}") for va, _ in pairs]
    renamed += [dict(rows_b[vb], variant=f"B: {rows_b[vb]['variant']}") for _, vb in pairs]
    lines += _eval_section(run_a, renamed)
    for va, vb in pairs:
        diff = stats.paired_differences(rows_a[va]["per_seed"], rows_b[vb]["per_seed"])
        la, lb = rows_a[va]["variant"], rows_b[vb]["variant"]
        lines += _paired_section(f"B − A: {lb}", f"A: {la}", [dict(diff, variant=f"B: {lb}")], {})
    groups = {f"A: {rows_a[va]['variant']}": curve_groups(run_a)[va] for va, _ in pairs}
    groups |= {f"B: {rows_b[vb]['variant']}": curve_groups(run_b)[vb] for _, vb in pairs}
    lc = plots.learning_curves(groups, out / "learning_curves.png", title="A vs B")
    lines += [f"![learning curves]({_rel(lc, out)})", ""] if lc else []
    return _write_md(out / "compare.md", lines + _problems(run_a) + _problems(run_b))
