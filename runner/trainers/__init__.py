"""Trainer registry: the training loop a unit runs, resolved from the manifest's algorithm.

Every Stable-Baselines3 / sb3-contrib algorithm is trained by `sb3`; an algorithm with its own
loop (Brax's JAX PPO, RSL-RL's PPO on Isaac Lab) names its trainer in OWN_LOOPS and is a new
module here implementing the `Trainer` contract in `base.py`.
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
# Algorithm -> (its trainer, the one backend it runs on). That backend runs SB3 algorithms too.
OWN_LOOPS: Final[dict[str, tuple[str, str]]] = {
    "brax_ppo": ("brax_ppo", "brax"),
    "rsl_rl_ppo": ("rsl_rl_ppo", "isaaclab"),
}


def trainer_for(algo: str) -> str:
    """The trainer of an algorithm name (validated by the manifest checks)."""
    return OWN_LOOPS[algo][0] if algo in OWN_LOOPS else "sb3"


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
