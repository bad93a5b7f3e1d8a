"""Trainer registry: the training loop a unit runs, resolved from the manifest's algorithm.

Every Stable-Baselines3 / sb3-contrib algorithm is trained by `sb3`; an algorithm with its own
loop (Brax's JAX PPO, RSL-RL's PPO on Isaac Lab) is a trainer of the same name: a new module here
implementing the `Trainer` contract in `base.py` (its params and limits, training, evaluation,
bench, determinism attempt, resume), plus its name in TRAINERS. Nothing outside this package names
a trainer.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Final, cast

from runner.errors import BackendUnavailable

if TYPE_CHECKING:
    from runner.trainers.base import Trainer

TRAINERS: Final[dict[str, str]] = {
    "sb3": "runner.trainers.sb3",
    "brax_ppo": "runner.trainers.brax_ppo",
    "rsl_rl_ppo": "runner.trainers.rsl_rl_ppo",
}
DEFAULT: Final = "sb3"  # trains every algorithm that has no trainer of its own name


def trainer_for(algo: str) -> str:
    """The trainer of an algorithm name: the trainer of that name (an own loop), else SB3's
    (which names an unknown algorithm in `check_params`)."""
    return algo if algo in TRAINERS and algo != DEFAULT else DEFAULT


def register(name: str, module: str) -> None:
    """Add a trainer at run time (tests' toy trainer); a shipped one is listed in TRAINERS."""
    cast("dict[str, str]", TRAINERS)[name] = module
    get_trainer.cache_clear()


@cache
def get_trainer(name: str) -> Trainer:
    if name not in TRAINERS:
        raise BackendUnavailable(
            f"the {name} trainer is not part of this version of rlcrate "
            f"(trainers: {', '.join(TRAINERS)})"
        )
    return cast("Trainer", importlib.import_module(TRAINERS[name]))


if TYPE_CHECKING:  # mypy checks every registered trainer against the contract
    from runner.trainers import brax_ppo, rsl_rl_ppo, sb3

    _CONFORMING: tuple[Trainer, ...] = (sb3, brax_ppo, rsl_rl_ppo)
