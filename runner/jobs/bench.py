"""Job `bench`: env-only and training steps/s for every variant x `bench.sweep` point.

Env-only steps/s step the same VecEnv training uses (`jobs.common.make_env`) with random actions
drawn before timing; training steps/s run the manifest's algorithm for `bench.steps` after a
warm-up of `bench.warmup` steps (at least one rollout/update). Each is repeated `bench.repeats`
times: median, min and max. During training a thin VecEnv wrapper adds up the time spent in
step_async/step_wait, giving the fraction of training time spent stepping envs.

Where the gain flattens: parallel efficiency at sweep value x is
    (steps/s at x / steps/s at x0) / (x / x0)
against the first (smallest) value x0; the gain "flattens" at the first point whose efficiency
drops below FLATTEN_EFFICIENCY (0.5: doubling the envs no longer buys even half of the ideal
speed-up). Categorical sweeps (modes, backends) report each point's ratio to the first.

The harness's own cost (loop, clock reads, the timing wrapper) is measured on a no-op env and
reported as a fraction of the measured steps/s (`overhead` in bench.json).
"""

from __future__ import annotations

import itertools
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runner.errors import ManifestError, RunnerError, UnitFailed
from runner.manifest.schema import Manifest

FLATTEN_EFFICIENCY = 0.5
ACTION_BATCHES = 64  # distinct random action batches, cycled through while timing


@dataclass
class Point:
    variant: str
    overrides: dict[str, Any]  # the sweep point's overrides (on top of the variant's)
    label: str
    x: Any
    config: Manifest


def _sweep_sets(manifest: Manifest) -> list[dict[str, Any]]:
    sweep = manifest.bench.sweep
    keys = list(sweep)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*sweep.values())]


def _label(variant: str, overrides: dict[str, Any], many_variants: bool) -> str:
    if len(overrides) == 1:
        text = str(next(iter(overrides.values())))
    else:
        text = ", ".join(f"{k}={v}" for k, v in overrides.items())
    if many_variants or not text:
        return f"{variant}: {text}" if text else variant
    return text


def _apply(base: Manifest, overrides: dict[str, Any]) -> Manifest:
    """The sweep point's config, validated; raises ValueError/ValidationError/RunnerError.

    A sweep over parallel.envs alone, on a config with one worker per env, keeps one worker per
    env when the config would otherwise be invalid (workers > envs, or gymnasium's SubprocVecEnv,
    which needs one process per env).
    """
    from pydantic import ValidationError

    from runner.manifest.matrix import apply_overrides

    tie = (
        "parallel.envs" in overrides
        and "parallel.workers" not in overrides
        and base.parallel.workers == base.parallel.envs
    )
    try:
        cfg = apply_overrides(base, overrides)
        problem = _parallel_problem(cfg)
    except ValidationError:
        if not tie:
            raise
        problem = "workers > envs"
    if problem and tie:
        cfg = apply_overrides(base, {**overrides, "parallel.workers": overrides["parallel.envs"]})
        problem = _parallel_problem(cfg)
    if problem:
        raise RunnerError(problem)
    return cfg


def _parallel_problem(cfg: Manifest) -> str | None:
    from runner.backends import get_backend

    backend = get_backend(cfg.env.backend)
    reason = backend.available()
    if reason:
        return reason
    backend.check_env(cfg.env)
    check = getattr(backend, "check_parallel", None)
    return check(cfg.parallel) if check else None


def _point_problems(exc: Exception, where: str) -> list[str]:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return [
            f"bench.sweep {where}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors()
        ]
    return [f"bench.sweep {where}: {exc}"]


def plan(manifest: Manifest) -> list[Point]:
    """Every distinct (variant, sweep point) config, all validated before anything runs.

    Points whose configs coincide (the sweep overrides what the matrix varies) are measured once.
    """
    from pydantic import ValidationError

    from runner.manifest.matrix import expand

    try:
        variants = expand(manifest)
    except (ValueError, ValidationError) as exc:
        raise ManifestError([f"matrix: {exc}"]) from None
    problems, points, seen = [], [], set()
    for variant in variants:
        for overrides in _sweep_sets(manifest):
            where = ", ".join(f"{k}={v!r}" for k, v in overrides.items()) or "(no sweep)"
            if len(variants) > 1:
                where += f" (variant {variant.name})"
            try:
                cfg = _apply(variant.config or manifest, overrides)
            except (ValueError, ValidationError, RunnerError) as exc:
                problems += _point_problems(exc, where)
                continue
            key = cfg.model_dump_json(exclude={"matrix", "expect"})
            if key not in seen:
                seen.add(key)
                x = next(iter(overrides.values())) if len(overrides) == 1 else None
                points.append(Point(variant.name, overrides, "", x, cfg))
    if problems:
        raise ManifestError(list(dict.fromkeys(problems)))
    from runner.plots import display_names

    names = {p.variant for p in points}
    short = display_names({v.name: v.overrides for v in variants if v.name in names})
    for p in points:
        if len(names) == 1:
            p.variant = "default"
        p.label = _label(short.get(p.variant, p.variant), p.overrides, len(names) > 1)
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


def _spread(values: list[float]) -> dict[str, Any]:
    return {
        "median": float(np.median(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "runs": [float(v) for v in values],
    }


def _action_batches(space: Any, n_envs: int, seed: int) -> list[np.ndarray]:
    space.seed(seed)
    return [np.stack([space.sample() for _ in range(n_envs)]) for _ in range(ACTION_BATCHES)]


def _timed_loop(venv: Any, actions: list[np.ndarray], vec_steps: int) -> float:
    seq = [actions[i % len(actions)] for i in range(vec_steps)]  # built before the clock starts
    step = venv.step
    t0 = time.perf_counter()
    for a in seq:
        step(a)
    return time.perf_counter() - t0


def measure_env(venv: Any, spec: Any, seed: int) -> dict[str, Any]:
    """Env-only steps/s with random actions: warm-up, then `repeats` timed runs of `steps`."""
    n = venv.num_envs
    actions = _action_batches(venv.action_space, n, seed)
    vec_steps = max(1, math.ceil(spec.steps / n))
    venv.reset()
    if spec.warmup:
        _timed_loop(venv, actions, math.ceil(spec.warmup / n))
    rates = [n * vec_steps / _timed_loop(venv, actions, vec_steps) for _ in range(spec.repeats)]
    return {"steps_per_s": _spread(rates), "steps": n * vec_steps}


def _step_timer(venv: Any) -> Any:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class StepTimer(VecEnvWrapper):  # type: ignore[misc]
        """Adds up the seconds from step_async to the end of step_wait (two clock reads)."""

        def __init__(self, inner: Any) -> None:
            super().__init__(inner)
            self.seconds = 0.0
            self._t0 = 0.0

        def reset(self) -> Any:
            return self.venv.reset()

        def step_async(self, actions: np.ndarray) -> None:
            self._t0 = time.perf_counter()
            self.venv.step_async(actions)

        def step_wait(self) -> Any:
            out = self.venv.step_wait()
            self.seconds += time.perf_counter() - self._t0
            return out

    return StepTimer(venv)


def measure_train(cfg: Manifest, venv: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """Training steps/s and the fraction of training time spent stepping envs."""
    from runner.jobs.common import make_model

    spec = cfg.bench
    timer = _step_timer(venv)
    model = make_model(cfg, timer, seed=seeds["model"], tb_dir=None)
    model.learn(max(spec.warmup, 1))  # at least one rollout and update: allocations, caches
    rates, fractions, done = [], [], 0
    for _ in range(spec.repeats):
        before, timer.seconds = model.num_timesteps, 0.0
        t0 = time.perf_counter()
        model.learn(spec.steps, reset_num_timesteps=False)
        elapsed = time.perf_counter() - t0
        done = model.num_timesteps - before
        rates.append(done / elapsed)
        fractions.append(timer.seconds / elapsed)
    return {
        "steps_per_s": _spread(rates),
        "steps": done,
        "env_fraction": float(np.median(fractions)),
    }


def harness_overhead(iterations: int = 20_000) -> dict[str, float]:
    """Seconds per vector step the harness adds: the timed loop, and the timing wrapper."""
    from gymnasium import spaces

    class Null:
        num_envs, observation_space, action_space = 1, spaces.Discrete(2), spaces.Discrete(2)

        def get_attr(self, name: str, indices: Any = None) -> list[Any]:
            return [None]

        def step(self, a: Any) -> None:
            return None

        def step_async(self, a: Any) -> None:
            return None

        def step_wait(self) -> None:
            return None

    null, actions = Null(), [np.zeros(1)]
    loop = min(_timed_loop(null, actions, iterations) for _ in range(3)) / iterations
    timer = _step_timer(null)

    def pair(v: Any) -> float:
        t0 = time.perf_counter()
        for _ in range(iterations):
            v.step_async(None)
            v.step_wait()
        return time.perf_counter() - t0

    wrapped = min(pair(timer) - pair(null) for _ in range(3)) / iterations
    return {"loop_s_per_vector_step": loop, "timer_s_per_vector_step": max(wrapped, 0.0)}


def host_info() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def run_point(point: Point) -> dict[str, Any]:
    """Measure one point; a failure is recorded in the point, not raised."""
    from runner.jobs.common import make_env
    from runner.seeding import derive, seed_everything

    cfg, out = (
        point.config,
        {
            "label": point.label,
            "variant": point.variant,
            "x": point.x,
            "overrides": point.overrides,
            "error": None,
        },
    )
    seeds = derive(cfg.seeds[0])
    seed_everything(seeds, torch_threads=cfg.algo.torch_threads)
    venv = None
    try:
        venv = make_env(cfg, seed=seeds["env"])
        inner = getattr(venv, "venv", venv)
        out.update(
            backend=cfg.env.backend,
            env_id=cfg.env.id,
            envs=venv.num_envs,
            workers=cfg.parallel.workers,
            mode=cfg.parallel.mode,
            vec_env=type(inner).__name__,
            algo=cfg.algo.name,
        )
        out["env_only"] = measure_env(venv, cfg.bench, seeds["env"])
        out["train"] = measure_train(cfg, venv, seeds) if cfg.bench.train else None
    except Exception as exc:  # noqa: BLE001 - one broken point must not lose the others
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if venv is not None:
            venv.close()
    return out


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
        if numeric:
            pts.sort(key=lambda p: float(p["x"]))
        for key in ("env_only", "train"):
            _efficiencies(pts, key, numeric)
            if numeric and len(pts) > 1:
                flatten.setdefault(variant, {})[key] = _flatten(pts, key)
                findings += _flatten_text(bench, variant, key, pts, flatten[variant][key])
            elif len(pts) > 1:
                findings += [
                    f"{name(key)} steps/s: {p['label']} is ×{p['speedup'][key]:.2f} "
                    f"{pts[0]['label']}"
                    for p in pts[1:]
                    if key in p.get("speedup", {})
                ]
    for p in bench["points"]:
        if p.get("train"):
            findings.append(
                f"{p['label']}: training spends "
                f"{100 * p['train']['env_fraction']:.0f}% of its time stepping envs"
            )
    bench["flatten"] = flatten
    bench["findings"] = findings


def name(key: str) -> str:
    return {"env_only": "env-only", "train": "training"}[key]


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
    if flat["x"] is None:
        return [f"{head}; keeps scaling (efficiency ≥ {FLATTEN_EFFICIENCY} throughout)"]
    return [
        f"{head}; the gain flattens at {path}={flat['x']} (efficiency "
        f"{flat['efficiency']:.3g} < {FLATTEN_EFFICIENCY})"
    ]


def add_overhead(bench: dict[str, Any], cost: dict[str, float]) -> None:
    """The harness's cost as a fraction of each measured rate (per vector step)."""
    fractions = {"env_only": 0.0, "train": 0.0}
    per_step = {
        "env_only": cost["loop_s_per_vector_step"],
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


def print_table(bench: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    table = Table(
        title=f"bench: {bench['name']} ({bench['host']['cpu_model']}, "
        f"{bench['host']['cpu_usable']} cores)"
    )
    for col in ("point", "env-only steps/s", "training steps/s", "env time", "× first (env/train)"):
        table.add_column(col, justify="left" if col == "point" else "right")
    for p in bench["points"]:
        if p["error"]:
            table.add_row(p["label"], f"[red]{p['error']}[/red]", "", "", "")
            continue
        cells = [_rate(p.get(k)) for k in ("env_only", "train")]
        frac = f"{100 * p['train']['env_fraction']:.0f}%" if p.get("train") else "–"
        sp = p.get("speedup", {})
        ratio = " / ".join(f"{sp[k]:.2f}" if k in sp else "–" for k in ("env_only", "train"))
        table.add_row(p["label"], *cells, frac, ratio)
    console.print(table)
    for line in bench["findings"]:
        console.print(f"• {line}")


def _rate(m: dict[str, Any] | None) -> str:
    if not m:
        return "–"
    s = m["steps_per_s"]
    return f"{s['median']:,.0f} [{s['min']:,.0f}–{s['max']:,.0f}]"


def run_bench(manifest: Manifest, run_dir: Path, *, console: Any = None) -> dict[str, Any]:
    """Benchmark every point, write bench.json and plots/scaling.png, print the table.

    Raises ManifestError before running anything if a sweep point is invalid, and UnitFailed
    after writing the files if a point failed while running.
    """
    from rich.console import Console

    from runner import plots
    from runner.rundir import write_json_atomic

    console = console or Console()
    points = plan(manifest)
    spec = manifest.bench
    bench: dict[str, Any] = {
        "name": manifest.name,
        "axis": axis_info(manifest, points),
        "sweep": spec.sweep,
        "variants": sorted({p.variant for p in points}),
        "settings": {
            "steps": spec.steps,
            "warmup": spec.warmup,
            "repeats": spec.repeats,
            "train": spec.train,
            "flatten_efficiency": FLATTEN_EFFICIENCY,
        },
        "host": {**host_info(), "load_avg_before": list(os.getloadavg())},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    results = []
    for i, point in enumerate(points, 1):
        console.print(f"bench {i}/{len(points)}: {point.label}")
        results.append(run_point(point))
    bench["points"] = results
    bench["host"]["load_avg_after"] = list(os.getloadavg())
    analyse(bench)
    add_overhead(bench, harness_overhead())
    run_dir = Path(run_dir)
    write_json_atomic(run_dir / "bench.json", bench)
    plots.scaling(bench, run_dir / "plots" / "scaling.png")
    print_table(bench, console)
    failed = [p for p in results if p["error"]]
    if failed:
        raise UnitFailed(f"bench: {len(failed)} of {len(results)} points failed; see bench.json")
    return bench
