"""Planning a bench: every (variant, sweep point) config, validated before anything runs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from runner.errors import ManifestError, RunnerError
from runner.manifest.schema import Manifest


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
    return backend.check_parallel(cfg.parallel)


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
