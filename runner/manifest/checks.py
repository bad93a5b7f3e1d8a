"""Checks beyond the schema, run by `validate` before any work starts: matrix and sweep paths,
every variant valid, env ids known to their backend, the algorithm exists, takes the given
params and fits the env's action space, and `expect:` names real metrics.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from runner.errors import RunnerError
from runner.manifest import algos
from runner.manifest.load import dotted, line_of, validation_problems
from runner.manifest.matrix import (
    apply_overrides,
    conflict_problem,
    override_sets,
    path_problem,
)
from runner.manifest.schema import Manifest

EXPECT_METRICS = {
    "eval.mean_reward": "across-seed mean of the per-seed mean eval return",
    "eval.std_reward": "across-seed standard deviation of the per-seed means",
    "eval.iqm": "interquartile mean of the per-seed means",
    "eval.iqm_ci_low": "lower end of the IQM's 95% bootstrap CI",
    "eval.min_seed_reward": "the worst seed's mean eval return",
    "train.steps_per_s": "mean training steps per second across seeds",
    "train.wall_time_s": "mean training wall time across seeds",
}

Lines = dict[tuple[Any, ...], int]


def _at(source: str, lines: Lines, loc: tuple[Any, ...], msg: str) -> str:
    return f"{source}:{line_of(loc, lines)}: {dotted(loc)}: {msg}"


def _variant_configs(m: Manifest, source: str, lines: Lines, out: list[str]) -> list[Manifest]:
    sets = override_sets(m)
    configs = []
    for i, overrides in enumerate(sets):
        base_loc: tuple[Any, ...] = ("matrix", i) if isinstance(m.matrix, list) else ("matrix",)
        bad = False
        for path in overrides:
            problem = path_problem(path)
            if problem:
                out.append(_at(source, lines, base_loc + (path,), problem))
                bad = True
        conflict = None if bad else conflict_problem(list(overrides))
        if conflict:
            out.append(_at(source, lines, base_loc + (next(iter(overrides)),), conflict))
        if bad or conflict:
            continue
        try:
            configs.append(apply_overrides(m, overrides))
        except ValidationError as exc:
            where = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
            # point at the matrix entry that produced the bad value
            at = {tuple(k.split(".")): lines.get(base_loc + (k,), 0) for k in overrides}
            for err_lines in validation_problems(exc, source, {**lines, **at}, ()):
                out.append(f"{err_lines} (in matrix variant {where})")
    if isinstance(m.matrix, dict):
        for key, values in m.matrix.items():
            if not values:
                out.append(
                    _at(source, lines, ("matrix", key), "expected a non-empty list of values")
                )
    return configs


def _check_env(cfg: Manifest, source: str, lines: Lines, out: list[str], seen: set[Any]) -> Any:
    from runner.backends import get_backend

    key = (cfg.env.backend, cfg.env.id, json.dumps(cfg.env.kwargs, sort_keys=True, default=str))
    backend = get_backend(cfg.env.backend)
    try:
        backend.check_env(cfg.env)
        if hasattr(backend, "action_kind"):
            return backend.action_kind(cfg.env)
        spaces = backend.spaces(cfg.env)
        return type(spaces[1]).__name__ if spaces is not None else None
    except RunnerError as exc:
        if key not in seen:
            out.append(_at(source, lines, ("env", "id"), str(exc).removeprefix("env.id: ")))
        seen.add(key)
        return None


def _check_parallel(cfg: Manifest, source: str, lines: Lines, out: list[str]) -> None:
    from runner.backends import get_backend

    check = getattr(get_backend(cfg.env.backend), "check_parallel", None)
    problem = check(cfg.parallel) if check else None
    if problem:
        out.append(_at(source, lines, ("parallel", "workers"), problem))


def _check_algo(cfg: Manifest, spaces: Any, source: str, lines: Lines, out: list[str]) -> None:
    problem = algos.check(cfg.algo.name, cfg.algo.params, spaces, backend=cfg.env.backend)
    if problem:
        field, msg = problem
        out.append(_at(source, lines, ("algo", *field.split(".")), msg))


def _sweep_problems(m: Manifest, source: str, lines: Lines) -> list[str]:
    """Every (variant, sweep point) checked exactly as the bench job will run it."""
    from runner.errors import ManifestError
    from runner.jobs.bench_plan import plan

    try:
        plan(m)
    except ManifestError as exc:
        line = line_of(("bench", "sweep"), lines)
        return [f"{source}:{line}: {p}" for p in exc.problems]
    return []


def check_manifest(m: Manifest, source: str, lines: Lines) -> list[str]:
    """Every problem found, one line each (empty list: the manifest is good to run)."""
    out: list[str] = []
    configs = _variant_configs(m, source, lines, out) or [m]
    env_seen: set[Any] = set()
    for cfg in configs:  # the same problem in several variants is reported once (below)
        spaces = _check_env(cfg, source, lines, out, env_seen)
        _check_parallel(cfg, source, lines, out)
        _check_algo(cfg, spaces, source, lines, out)
    sweep_ok = True
    for path in m.bench.sweep:
        problem = path_problem(path)
        if problem:
            out.append(_at(source, lines, ("bench", "sweep", path), problem))
            sweep_ok = False
    if m.bench.sweep and sweep_ok and not out:
        out += _sweep_problems(m, source, lines)
    for metric in m.expect:
        if metric not in EXPECT_METRICS:
            import difflib

            close = difflib.get_close_matches(metric, list(EXPECT_METRICS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            out.append(
                _at(
                    source,
                    lines,
                    ("expect", metric),
                    f"unknown metric{hint} (known: {', '.join(EXPECT_METRICS)})",
                )
            )
    return list(dict.fromkeys(out))
