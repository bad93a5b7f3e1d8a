"""Warm starts (`train.init_from`): a fresh unit starts from a parent unit's policy and, when
normalizing, its observation and return statistics (which then go on updating). The parent's
optimizer state and step count stay behind: the unit trains its own `train.timesteps` with its
own hyperparameters, as rl-zoo3's `--trained-agent` continues a model.

`runner.checks.lineage` finds, checks and pins the parent before any unit starts; the unit's
config names the pinned parent unit exactly (`ResolvedVariant.unit_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.errors import FieldError
from runner.manifest.schema import Manifest
from runner.record.rundir import UnitRef
from runner.trainers.base import MODEL_FILE
from runner.trainers.sb3.files import STATS_FILE, peek_params, restore_stats
from runner.trainers.sb3.options import options

FIELD = ("train", "init_from")


def start_files(cfg: Manifest) -> list[str]:
    """What a child of a unit trained with `cfg` starts from: the model, then its statistics."""
    return [MODEL_FILE, *([STATS_FILE] if options(cfg).normalize is not None else [])]


def parent_dir(cfg: Manifest) -> Path:
    init = cfg.train.init_from
    assert init is not None and init.variant is not None and isinstance(init.seed, int), init
    return UnitRef(init.variant, init.seed).dir(Path(init.run))


def warm_start(model: Any, venv: Any, cfg: Manifest) -> None:
    """Load the parent's policy into `model` (built for this unit) and its statistics into
    `venv`; FieldError (one line at train.init_from) when the networks differ. Only the policy's
    weights are read from the parent's zip (`files.peek_params`: nothing unpickled); the
    spaces were compared from both manifests (`checks.lineage`), and a network built for other
    spaces does not take the parent's weights."""
    unit = parent_dir(cfg)
    params = peek_params(unit / MODEL_FILE)
    try:
        model.policy.load_state_dict(params["policy"])
    except (RuntimeError, KeyError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FieldError(
            FIELD,
            "the parent's policy network does not fit this variant's (are "
            f"algo.params.policy_kwargs the parent's?): {first[:300]}",
        ) from None
    if options(cfg).normalize is not None:
        restore_stats(venv, unit / STATS_FILE)


def parent_problem(parent: Manifest, cfg: Manifest) -> str | None:
    """Why a unit of `cfg` cannot start from one trained with `parent`: another algorithm or
    policy, or observations normalized on one side only."""
    theirs, mine = options(parent), options(cfg)
    if theirs.name != mine.name or theirs.policy != mine.policy:
        return (
            f"the parent trained {theirs.name} with {theirs.policy}, this variant {mine.name} "
            f"with {mine.policy}: a warm start continues the same algorithm and policy"
        )
    if (theirs.normalize is None) != (mine.normalize is None):
        said = "normalized" if theirs.normalize is not None else "did not normalize"
        wants = "turns it off" if mine.normalize is None else "turns it on"
        return (
            f"the parent {said} observations (algo.normalize) and this variant {wants}: its "
            "policy would see inputs on another scale; set algo.normalize as the parent's"
        )
    return None
