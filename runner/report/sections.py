"""The sections of report.md, each a list of markdown lines (empty when there is nothing to say)."""

from __future__ import annotations

from typing import Any

from runner.report import plots
from runner.report.load import Run
from runner.report.markdown import fmt, md_table, mean_pm, rel_path, with_ci
from runner.report.metrics import reward_levels, time_to_levels
from runner.report.tb import Curve


def eval_section(run: Run, rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "## Evaluation",
        "",
        "Per seed: mean ± std over evaluation episodes. Across seeds: mean ± sample std of "
        "the per-seed means; IQM (interquartile mean) with a 95% percentile bootstrap CI.",
        "",
    ]
    body = []
    for r in rows:
        units = {s: run.units.get((r["name"], s)) for s in r["per_seed"]}
        mark = {s: "*" if u is not None and u.resumed else "" for s, u in units.items()}
        seeds = ", ".join(
            f"{s}{mark[s]}: {fmt(m)} ± {fmt(r['per_seed_std'][s])}"
            for s, m in r["per_seed"].items()
        )
        n = r["n_seeds"]
        body.append(
            [
                r["variant"],
                seeds or "–",
                mean_pm(r["mean"], r["std"], n),
                with_ci(r["iqm"], r["iqm_ci95"][0], r["iqm_ci95"][1], n),
                f"{n}/{len(run.seeds)}",
            ]
        )
    out += md_table(
        ["variant", "per seed (seed: mean ± std)", "mean ± std", "IQM [95% CI]", "seeds"], body
    )
    from runner.report.stats import iqm_note

    note = iqm_note({r["n_seeds"] for r in rows})
    return out + ([f"IQM: {note}.", ""] if note else [])


def paired_section(title: str, base: str, rows: list[dict], best: dict[str, int]) -> list[str]:
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
            ", ".join(f"{s}: {fmt(d)}" for s, d in zip(r["seeds"], r["differences"], strict=True))
            or "–",
            fmt(r["mean"]),
            f"[{fmt(r['ci95'][0])}, {fmt(r['ci95'][1])}]",
            f"{r['wins']}–{r['losses']}–{r['ties']}",
        ]
        for r in rows
    ]
    out += md_table(["variant", "per-seed difference", "mean", "95% CI", "wins–losses–ties"], body)
    if best:
        out += [
            "Seeds won (the variant with the best return on that seed, over the seeds every "
            "variant finished): " + ", ".join(f"{v}: {n} seed(s)" for v, n in best.items()),
            "",
        ]
    return out


TTR_HEADER = ["variant", "level", "seconds", "env steps", "seeds reached"]


def ttr_rows(groups: dict[str, list[Curve]], levels: list[float]) -> list[list[str]]:
    """The "time to reach" table's rows: per variant and level, the wall-clock seconds and env
    steps until `rollout/ep_rew_mean` first reached it, over the seeds that reached it. The one
    computation behind report.md's table and `rlcrate report --levels`."""
    body = []
    for v, curves in groups.items():
        for level, t in time_to_levels(curves, levels).items():
            n = t["reached"]
            body.append(
                [
                    v,
                    fmt(level),
                    mean_pm(t["mean_s"][0], t["mean_s"][1], n) if n else "not reached",
                    mean_pm(t["mean_steps"][0], t["mean_steps"][1], n) if n else "not reached",
                    f"{n}/{t['of']}",
                ]
            )
    return body


def ttr_section(run: Run, groups: dict[str, list[Curve]]) -> list[str]:
    levels, auto = reward_levels(run, groups)
    if not levels:
        return []
    out = [
        "## Time to reach reward levels",
        "",
        "Wall-clock seconds (and env steps) until `rollout/ep_rew_mean` first reached the "
        "level: mean ± std over the seeds that reached it."
        + (" Levels chosen automatically (set `eval.reward_levels` to fix them)." if auto else "")
        + " Other levels, without changing the run: `rlcrate report RUN --levels 0.5,1,2`.",
        "",
    ]
    return out + md_table(TTR_HEADER, ttr_rows(groups, levels))


def expect_section(run: Run) -> list[str]:
    body = [
        [
            v,
            e.metric,
            e.op,
            fmt(e.value),
            fmt(e.actual),
            "✅ met" if e.met is True else "❌ not met" if e.met is False else "no result yet",
        ]
        for v, data in (run.summary.variants if run.summary else {}).items()
        for e in data.expect
    ]
    if not body or run.summary is None:
        return []
    met = run.summary.expectations_met
    said = "yes" if met is True else "no" if met is False else "no results yet"
    return ["## Expectations", "", f"All met: **{said}**", ""] + md_table(
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
        for key in ("env_only", "inference", "train"):
            s = (p.get(key) or {}).get("steps_per_s")
            cells.append(f"{fmt(s['median'])} [{fmt(s['min'])}–{fmt(s['max'])}]" if s else "–")
        frac = (p.get("train") or {}).get("env_fraction")
        cells.append(f"{100 * frac:.0f}%" if frac is not None else "–")
        cold = p.get("cold_start")
        cells.append(f"{fmt(cold['seconds'])} s" if cold else "–")
        cells.append(
            fmt(p.get("speedup", {}).get("env_only"))
            + " / "
            + fmt(p.get("speedup", {}).get("train"))
        )
        cells.append(p.get("error") or "")
        body.append(cells)
    out += md_table(
        [
            "point",
            "env-only steps/s",
            "env + inference steps/s",
            "training steps/s",
            "training time stepping envs",
            "cold start",
            "× first point (env / train)",
            "error",
        ],
        body,
    )
    out += [f"- {line}" for line in bench.get("findings", [])] + [""]
    return out + ([f"![scaling]({plot})", ""] if plot else [])


def units_section(run: Run) -> list[str]:
    missing = [u for u in run.units.values() if u.eval is None]
    out = (
        [
            "The unit finished and was evaluated."
            if len(run.units) == 1
            else f"All {len(run.units)} units finished and evaluated.",
            "",
        ]
        if not missing
        else ["## Missing or incomplete units", ""]
    )
    for u in missing:
        why = f": {u.error}" if u.error else ""
        out.append(f"- `{u.variant}` seed {u.seed}: {u.state}{why}")
    return out + ([""] if missing else []) + resumed_section(run)


def resumed_section(run: Run) -> list[str]:
    """Units that were stopped and continued: marked (*) in the tables, listed here."""
    resumed = [u for u in run.units.values() if u.resumed]
    if not resumed:
        return []
    out = [
        "## Resumed units (*)",
        "",
        "Stopped and continued with `--resume`. Their learning curves are joined: a resumed "
        "segment replaces the steps it repeats, and wall time counts training only. A unit "
        "continued from a checkpoint keeps its weights but not its env and random streams, so "
        "its numbers are close to, not identical with, an uninterrupted run.",
        "",
    ]
    for u in resumed:
        how = (
            "continued from the checkpoint(s) at step " + ", ".join(f"{r:,}" for r in u.resumes)
            if u.resumes
            else "restarted from scratch"
        )
        out.append(f"- `{u.variant}` seed {u.seed}: {how}")
    return out + [""]


def problems_section(run: Run) -> list[str]:
    lines = [f"- {p}" for u in run.units.values() for p in u.problems]
    return ["## Files that could not be read", ""] + lines + [""] if lines else []


def bench_section(run: Run) -> list[str]:
    if not run.bench:
        return []
    scaling = run.path / "plots/scaling.png"
    bench = run.bench.model_dump(mode="json")  # the plots and tables index its plain data
    if not scaling.is_file():
        plots.scaling(bench, scaling)
    return bench_lines(bench, rel_path(scaling, run.path) if scaling.is_file() else None)


def hyperparameters_section(run: Run) -> list[str]:
    """Where the algorithm's values came from (rl-zoo3's defaults) and whether VecNormalize ran:
    a reader comparing with another paper needs both. Empty when neither applies."""
    data = (
        run.manifest if isinstance(run.manifest, dict) else {}
    )  # the run's, as the report read it
    algo: dict[str, Any] = data["algo"] if isinstance(data.get("algo"), dict) else {}
    sources: dict[str, Any] = data["sources"] if isinstance(data.get("sources"), dict) else {}
    zoo = sorted({s for s in sources.values() if isinstance(s, str) and s.startswith("rl-zoo3")})
    norm = algo.get("normalize")
    if not zoo and not norm:
        return []
    out = ["## Hyperparameters", ""]
    if zoo:
        out.append(
            f"- Defaults from {', '.join(zoo)} under the manifest's own values (each value's "
            "source: `sources` in resolved.yaml)."
        )
    if isinstance(norm, dict):
        what = " and ".join(k for k in ("obs", "reward") if norm.get(k)) or "nothing"
        out.append(
            f"- VecNormalize ({what}; clip_obs {norm.get('clip_obs')}, clip_reward "
            f"{norm.get('clip_reward')}): statistics in each unit's `vecnormalize.npz`; "
            "evaluation used them frozen, with the env's own rewards."
        )
    return out + [""]


def lineage_section(run: Run) -> list[str]:
    """Where warm-started variants began (resolved.yaml `parent`): a reader of the curves needs
    to know they did not start from nothing."""
    variants = run.manifest.get("variants") if isinstance(run.manifest, dict) else None
    out: list[str] = []
    for name, data in (variants or {}).items():
        parent = data.get("parent") if isinstance(data, dict) else None
        if not isinstance(parent, dict) or not isinstance(parent.get("units"), dict):
            continue
        pairs = ", ".join(
            f"{seed}←{u.get('seed')}" for seed, u in parent["units"].items() if isinstance(u, dict)
        )
        config = data.get("config") or {}
        zero = (config.get("train") or {}).get("timesteps") == 0
        how = "evaluated as it was (zero-shot, no training)" if zero else "then trained"
        out.append(
            f"- `{name}`: from run `{parent.get('run_id')}` variant "
            f"`{parent.get('variant')}` (seed←parent seed: {pairs}), {how}"
        )
    if not out:
        return []
    return [
        "## Warm starts",
        "",
        "Policies (and statistics) loaded from another run:",
        "",
        *out,
        "",
    ]
