"""bench.sweep: every (variant, sweep point) config, validated before anything runs.

`validate` runs this to check each point exactly as the bench job will run it; the bench job
labels and measures the points it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from runner.errors import BackendUnavailable, ManifestError, RunnerError
from runner.manifest.matrix import apply_overrides, cross, expand
from runner.manifest.problems import Lines, Problem, at, dotted, user_loc
from runner.manifest.schema import Manifest

SWEEP = ("bench", "sweep")


@dataclass
class Point:
    variant: str
    overrides: dict[str, Any]  # the sweep point's overrides (on top of the variant's)
    label: str
    x: Any
    config: Manifest
    note: str = ""  # said once in the bench's findings (variants whose points coincide)


def _apply(base: Manifest, overrides: dict[str, Any]) -> Manifest:
    """The sweep point's config, validated; raises ValueError/ValidationError/RunnerError.

    A sweep over parallel.envs alone, on a config with one worker per env, keeps one worker per
    env when the config would otherwise be invalid (workers > envs, or gymnasium's SubprocVecEnv,
    which needs one process per env).
    """
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
    if reason:  # the same at every point: said once, for the backend
        raise BackendUnavailable(f"backend {cfg.env.backend}: {reason}")
    backend.require_env(cfg.env)
    found = backend.check_parallel(cfg.parallel)
    return found[0].message if found else None


def _point_messages(exc: Exception, where: str) -> list[str]:
    if isinstance(exc, ValidationError):
        return [f"{where}: {dotted(user_loc(e))}: {e['msg']}" for e in exc.errors()]
    return [f"{where}: {exc}"]


def points(manifest: Manifest, source: str = "manifest", lines: Lines | None = None) -> list[Point]:
    """Every distinct (variant, sweep point) config; ManifestError (at bench.sweep in `source`)
    listing every point that cannot run. Labels are left to the bench job.

    Points whose configs coincide (the sweep overrides what the matrix varies) appear once. Each
    variant sweeps its own `bench.sweep`: the manifest's, unless the matrix sets it.
    """
    lines = lines or {}
    try:
        variants = expand(manifest)
    except (ValueError, ValidationError) as exc:
        raise ManifestError([at(source, lines, ("matrix",), str(exc))]) from None
    problems: list[Problem] = []
    found: list[Point] = []
    seen: set[str] = set()
    for variant in variants:  # a variant may set its own bench.sweep (fewer envs on subproc)
        for overrides in cross((variant.config or manifest).bench.sweep):
            where = ", ".join(f"{k}={v!r}" for k, v in overrides.items()) or "(no sweep)"
            if len(variants) > 1:
                where += f" (variant {variant.name})"
            try:
                cfg = _apply(variant.config or manifest, overrides)
            except BackendUnavailable as exc:
                problems.append(at(source, lines, SWEEP, str(exc)))
                continue
            except (ValueError, ValidationError, RunnerError) as exc:
                problems += [at(source, lines, SWEEP, m) for m in _point_messages(exc, where)]
                continue
            key = cfg.model_dump_json(exclude={"matrix", "expect"})
            if key not in seen:
                seen.add(key)
                x = next(iter(overrides.values())) if len(overrides) == 1 else None
                found.append(Point(variant.name, overrides, "", x, cfg))
    if problems:
        raise ManifestError(list(dict.fromkeys(problems)))
    return found
