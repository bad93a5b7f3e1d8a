"""The Optuna side of a study: its storage in the run directory, the sampler, each dimension of
`tune.space` as an Optuna distribution (a trial's objective from its per-seed values is
`agree.objective`)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from runner.errors import UserInputError
from runner.manifest.tune import Dim, TuneSpec
from runner.record.tune import STUDY_FILE

SCALARS = (str, int, float, bool, type(None))


def quiet() -> None:
    """Optuna's per-trial INFO lines and its experimental-feature warnings off: rlcrate prints
    one line per trial itself."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _encoded(dim: Dim) -> bool:
    """A choice among lists or mappings (net_arch: [[64, 64], [256, 256]]): Optuna's categorical
    takes scalars only, so each value is its JSON text there and decoded back (`value`)."""
    return dim.choice is not None and not all(isinstance(v, SCALARS) for v in dim.choice)


def distribution(dim: Dim) -> BaseDistribution:
    if dim.choice is not None:
        values = [json.dumps(v) for v in dim.choice] if _encoded(dim) else dim.choice
        return CategoricalDistribution(values)
    if dim.int is not None:
        return IntDistribution(dim.int[0], dim.int[1], step=dim.step or 1)
    if dim.uniform is not None:
        return FloatDistribution(dim.uniform[0], dim.uniform[1])
    assert dim.log_uniform is not None
    return FloatDistribution(dim.log_uniform[0], dim.log_uniform[1], log=True)


def distributions(spec: TuneSpec) -> dict[str, BaseDistribution]:
    return {path: distribution(dim) for path, dim in spec.dims().items()}


def values(spec: TuneSpec, params: dict[str, Any]) -> dict[str, Any]:
    """A trial's Optuna params as manifest values (dotted path -> value), in the space's order."""
    out = {}
    for path, dim in spec.dims().items():
        raw = params[path]
        out[path] = json.loads(raw) if _encoded(dim) else raw
    return out


def _grid(dim: Dim) -> list[Any]:
    """Every value of a discrete dimension, as Optuna sees it."""
    if dim.choice is not None and _encoded(dim):
        return [json.dumps(v) for v in dim.choice]
    return dim.grid() or []


def sampler(spec: TuneSpec, seed: int) -> optuna.samplers.BaseSampler:
    """The manifest's sampler, seeded; UserInputError (one line) when it cannot run here."""
    kind = spec.sampler
    if kind == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if kind == "qmc":
        return optuna.samplers.QMCSampler(seed=seed)
    if kind == "grid":
        grid = {p: _grid(d) for p, d in spec.dims().items()}
        return optuna.samplers.GridSampler(grid, seed=seed)
    import importlib.util

    if importlib.util.find_spec("cmaes") is None:
        raise UserInputError(
            "tune.sampler: cmaes needs the cmaes package, which is not installed here "
            "(pip install cmaes), or choose tpe, random, grid or qmc"
        )
    return optuna.samplers.CmaEsSampler(seed=seed)


def pruner(spec: TuneSpec, every: int, timesteps: int) -> optuna.pruners.BasePruner:
    """The manifest's pruner; its steps are training steps (an evaluation during training is
    reported at the step it was due, a multiple of `eval.every`)."""
    p = spec.pruner
    if p.name == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=p.startup_trials, n_warmup_steps=p.warmup_steps
        )
    if p.name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=every, max_resource=timesteps, reduction_factor=p.reduction_factor
        )
    return optuna.pruners.NopPruner()


def open_study(
    run_dir: Path, name: str, spec: TuneSpec, seed: int, pruned_by: optuna.pruners.BasePruner
) -> optuna.Study:
    """The study in `run_dir`'s journal (checked first: `journal.repair`): made when new, loaded
    (every trial told so far) when the run is resumed. RunFileError when Optuna cannot read it."""
    from runner.tune import journal

    path = run_dir / STUDY_FILE
    try:
        store = journal.storage(path)
        if any(s.study_name == name for s in store.get_all_studies()):  # nothing appended
            return optuna.load_study(
                study_name=name, storage=store, sampler=sampler(spec, seed), pruner=pruned_by
            )
        return optuna.create_study(
            study_name=name,
            storage=store,
            sampler=sampler(spec, seed),
            pruner=pruned_by,
            direction=spec.objective.direction,
        )
    except (KeyError, ValueError, TypeError, AssertionError, AttributeError) as exc:
        raise journal.unreadable(path, exc) from None
