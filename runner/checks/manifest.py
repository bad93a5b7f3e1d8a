"""Checks beyond the schema, run by `validate` before any work starts: matrix and sweep paths,
every variant valid, env ids known to their backend, the algorithm exists, takes the given
params and fits the env's action space, and `expect:` names real metrics.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner import trainers
from runner.checks import lineage
from runner.checks.installed import missing_packages
from runner.errors import (
    FieldError,
    FieldProblem,
    ManifestError,
    RunnerError,
    SettingError,
    first_line,
)
from runner.manifest.matrix import (
    LABEL,
    apply_overrides,
    conflict_problem,
    duplicate_problems,
    given_names,
    label_problem,
    override_sets,
    path_problem,
)
from runner.manifest.problems import Lines, Loc, Problem, at, validation_problems
from runner.manifest.schema import Manifest
from runner.trainers import trainer_name, trainer_of
from runner.trainers.abilities import PeriodicEval, RecordsVideo, SearchSpaces


def _variant_configs(m: Manifest, source: str, lines: Lines, out: list[Problem]) -> list[Manifest]:
    sets = override_sets(m)
    labels = given_names(m)
    configs = []
    for i, overrides in enumerate(sets):
        base_loc: Loc = ("matrix", i) if isinstance(m.matrix, list) else ("matrix",)
        bad = False
        label = labels[i]
        problem = None if label is None else label_problem(label, labels)
        if problem:
            out.append(at(source, lines, base_loc + (LABEL,), problem))
            bad = True
        for path in overrides:
            problem = path_problem(path)
            if problem:
                out.append(at(source, lines, base_loc + (path,), problem))
                bad = True
        conflict = None if bad else conflict_problem(list(overrides))
        if conflict:
            out.append(at(source, lines, base_loc + (next(iter(overrides)),), conflict))
        if bad or conflict:
            continue
        try:
            configs.append(apply_overrides(m, overrides))
        except ValidationError as exc:
            where = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
            # point at the matrix entry that produced the bad value
            at_entry = {tuple(k.split(".")): lines.get(base_loc + (k,), 0) for k in overrides}
            for p in validation_problems(exc, source, {**lines, **at_entry}):
                msg = f"{p.message} (in matrix variant {where})"
                out.append(dataclasses.replace(p, message=msg))
    for loc, why in duplicate_problems(m):
        out.append(at(source, lines, loc, why))
    if isinstance(m.matrix, dict):
        for key, values in m.matrix.items():
            if not values:
                out.append(
                    at(source, lines, ("matrix", key), "expected a non-empty list of values")
                )
    return configs


def _check_env(
    cfg: Manifest, source: str, lines: Lines, out: list[Problem], seen: set[Any]
) -> str | None:
    """The env's action kind, or None (unknown, or a problem: added to `out` once per env)."""
    from runner.backends import get_backend

    key = (cfg.env.model_dump_json(), json.dumps(cfg.env.kwargs, sort_keys=True, default=str))
    backend = get_backend(cfg.env.backend)
    try:
        found = backend.check_env(cfg.env)
        if not found:
            return backend.action_kind(cfg.env)
    except FieldError as exc:  # making the env to learn its spaces: at that field's line
        found = [FieldProblem(exc.path, exc.message)]
    except SettingError:  # the machine's setting, not the manifest's
        raise
    except RunnerError as exc:  # the backend cannot run this env at all
        found = [FieldProblem(("env", "id"), str(exc))]
    except Exception as exc:  # the env's own constructor (a KeyError for an unknown map name)
        found = [_unmakeable(cfg, exc)]
    if key not in seen:
        out += [at(source, lines, p.path, p.message) for p in found]
    seen.add(key)
    return None


def _unmakeable(cfg: Manifest, exc: Exception) -> FieldProblem:
    """The env's constructor raised: one line at env.kwargs (at env.id when there are none)."""
    path = ("env", "kwargs") if cfg.env.kwargs else ("env", "id")
    with_kwargs = " with these kwargs" if cfg.env.kwargs else ""
    return FieldProblem(
        path, f"{cfg.env.id} could not be made{with_kwargs} ({first_line(exc, 200)})"
    )


def _check_trainer(cfg: Manifest, source: str, lines: Lines, out: list[Problem]) -> bool:
    """Whether the trainer `algo.trainer` names is installed and steps an env interface this
    backend makes (the other checks need both)."""
    from runner import backends, plugins

    name = cfg.algo.trainer
    if name is not None and not trainers.known(name):
        out.append(at(source, lines, ("algo", "trainer"), plugins.unknown("trainer", name)))
        return False
    wants = trainer_of(cfg).ENV_INTERFACE
    backend = backends.get_backend(cfg.env.backend)
    if wants in backend.interfaces:
        return True
    makers = [n for n in backends.names() if wants in backends.get_backend(n).interfaces]
    msg = (
        f"the {trainer_name(cfg)} trainer steps {wants} envs, which the {cfg.env.backend} backend "
        f"does not make (it makes {', '.join(backend.interfaces)}); backends that do: "
        f"{', '.join(makers) or 'none installed'}"
    )
    out.append(at(source, lines, ("algo", "trainer" if name else "name"), msg))
    return False


def _check_limits(cfg: Manifest, source: str, lines: Lines, out: list[Problem]) -> None:
    """Limits that need no package (the backend's parallel layout, the trainer's cross-field
    limits): checked even on a light install, before any unit starts."""
    from runner.backends import get_backend

    found = get_backend(cfg.env.backend).check_parallel(cfg.parallel)
    trainer = trainer_of(cfg)
    found += trainer.check_limits(cfg)
    if cfg.eval.every and not isinstance(trainer, PeriodicEval):
        found.append(
            FieldProblem(
                ("eval", "every"),
                f"the {trainer_name(cfg)} trainer evaluates only at the end of training; set "
                "eval.every to 0, or choose a trainer that evaluates during training",
            )
        )
    out += [at(source, lines, p.path, p.message) for p in found]


def video_problems(cfg: Manifest) -> list[FieldProblem]:
    """Why `cfg.eval.video` cannot be recorded (the trainer, the backend, the writers); needs
    none of the backend's packages."""
    from runner import video
    from runner.backends import get_backend
    from runner.backends.base import video_problems as backend_problems

    spec = cfg.eval.video
    if spec is None:
        return []
    if not isinstance(trainer_of(cfg), RecordsVideo):
        msg = f"the {trainer_name(cfg)} trainer's evaluation records no video; remove eval.video"
        return [FieldProblem(("eval", "video"), msg)]
    return backend_problems(get_backend(cfg.env.backend), cfg.env) or video.problems(spec)


def _check_algo(
    cfg: Manifest, kind: str | None, source: str, lines: Lines, out: list[Problem]
) -> None:
    for p in trainer_of(cfg).check_params(cfg, kind):
        out.append(at(source, lines, p.path, p.message))
    device = cfg.algo.compute_device()
    if device.startswith("cuda") and not _gpu_present():
        msg = (
            f"'{device}' needs an NVIDIA GPU, and this machine has none (nvidia-smi "
            "lists no GPU); use device: cpu, or run on a GPU machine"
        )
        out.append(at(source, lines, ("algo", "device"), msg))


@functools.cache
def _gpu_present() -> bool:
    from runner.record.machine import gpu_info

    return bool(gpu_info()["gpus"])


def _sweep_problems(m: Manifest, source: str, lines: Lines) -> list[Problem]:
    """Every (variant, sweep point) checked exactly as the bench job will run it."""
    from runner.checks.sweep import points

    try:
        points(m, source, lines)
    except ManifestError as exc:
        return exc.problems
    return []


def _tune_problems(m: Manifest, source: str, lines: Lines) -> list[Problem]:
    """`tune.space`'s paths: the paths a matrix may vary, none inside another."""
    if m.tune is None:
        return []
    if isinstance(m.tune.space, str):  # a named space: its trainer's
        trainer = trainer_of(m)
        found = (
            trainer.space_problem(m, m.tune.space)
            if isinstance(trainer, SearchSpaces)
            else f"the {trainer_name(m)} trainer knows no search space named {m.tune.space!r}; "
            "write it out"
        )
        return [at(source, lines, ("tune", "space"), found)] if found else []
    out = []
    for path in m.tune.dims():
        problem = path_problem(path)
        if problem:
            out.append(at(source, lines, ("tune", "space", path), problem))
    conflict = None if out else conflict_problem(list(m.tune.dims()))
    if conflict:
        out.append(at(source, lines, ("tune", "space"), conflict))
    return out


def check_manifest(m: Manifest, source: str, lines: Lines) -> list[Problem]:
    """Every problem found (empty list: the manifest is good to run)."""
    out: list[Problem] = []
    configs = _variant_configs(m, source, lines, out) or [m]
    env_seen: set[Any] = set()
    for cfg in configs:  # the same problem in several variants is reported once (below)
        if not _check_trainer(cfg, source, lines, out):
            continue
        _check_limits(cfg, source, lines, out)
        out += [at(source, lines, p.path, p.message) for p in video_problems(cfg)]
        if missing_packages(cfg.env.backend):  # a light install: checked where the units run
            continue
        kind = _check_env(cfg, source, lines, out, env_seen)
        _check_algo(cfg, kind, source, lines, out)
        found = lineage.problem(cfg, m.seeds, Path(source).resolve().parent)
        if found is not None:
            out.append(at(source, lines, found.path, found.message))
    sweep_ok = True
    for path in m.bench.sweep:
        problem = path_problem(path)
        if problem:
            out.append(at(source, lines, ("bench", "sweep", path), problem))
            sweep_ok = False
    if m.bench.sweep and sweep_ok and not out:
        out += _sweep_problems(m, source, lines)
    out += _tune_problems(m, source, lines)
    from runner.report.summary import EXPECT_METRICS

    for metric in m.expect:
        if metric not in EXPECT_METRICS:
            close = difflib.get_close_matches(metric, list(EXPECT_METRICS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = f"unknown metric{hint} (known: {', '.join(EXPECT_METRICS)})"
            out.append(at(source, lines, ("expect", metric), known))
    return list(dict.fromkeys(out))
