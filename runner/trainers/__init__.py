"""Trainer registry: the training loop a unit runs, resolved from the manifest's algorithm.

Every Stable-Baselines3 / sb3-contrib algorithm is trained by `sb3`; an algorithm with its own
loop (Brax's JAX PPO, RSL-RL's PPO on Isaac Lab) is a trainer of the same name: a new module here
implementing the `Trainer` contract in `base.py` (its params and limits, training, evaluation,
bench, determinism attempt, resume), plus its name in TRAINERS. A trainer of another package is
found by its entry point (`runner.plugins`) and chosen with `algo.trainer`. Nothing outside this
package names a trainer.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Final, cast

from runner.errors import BackendUnavailable

if TYPE_CHECKING:
    from runner.manifest.schema import Manifest
    from runner.trainers.base import Trainer

TRAINERS: Final[dict[str, str]] = {
    "sb3": "runner.trainers.sb3",
    "brax_ppo": "runner.trainers.brax_ppo",
    "rsl_rl_ppo": "runner.trainers.rsl_rl_ppo",
}
DEFAULT: Final = "sb3"  # trains every algorithm that has no trainer of its own name


def trainer_for(algo: str, trainer: str | None = None) -> str:
    """The trainer of an algorithm: `trainer` when the manifest names one (`algo.trainer`), else
    the own loop of the algorithm's name, else SB3's (which names an unknown algorithm in
    `check_params`)."""
    if trainer is not None:
        return trainer
    return algo if algo in TRAINERS and algo != DEFAULT else DEFAULT


def trainer_name(cfg: Manifest) -> str:
    """The name of the trainer a config's units train with."""
    return trainer_for(cfg.algo.name, cfg.algo.trainer)


def trainer_of(cfg: Manifest) -> Trainer:
    """The trainer a config's units train with."""
    return get_trainer(trainer_name(cfg))


def known(name: str) -> bool:
    """Whether `name` is rlcrate's own trainer or one an installed package adds."""
    from runner import plugins

    return name in TRAINERS or name in plugins.installed("trainer")


def names() -> list[str]:
    """Every trainer name: rlcrate's own, then the installed packages' (entry points)."""
    from runner import plugins

    return [*TRAINERS, *(n for n in plugins.installed("trainer") if n not in TRAINERS)]


def register(name: str, module: str) -> None:
    """Add a trainer at run time, in this process only (an installed package adds one to every
    process through the `rlcrate.trainers` entry point)."""
    cast("dict[str, str]", TRAINERS)[name] = module
    get_trainer.cache_clear()


def uses_torch(trainer: Trainer) -> bool:
    """Whether the trainer's loop runs on torch (then the unit seeds torch's generator and
    limits its threads); a trainer says otherwise with `USES_TORCH = False`."""
    return bool(getattr(trainer, "USES_TORCH", True))


@cache
def get_trainer(name: str) -> Trainer:
    from runner import plugins

    if name in TRAINERS:
        return cast("Trainer", importlib.import_module(TRAINERS[name]))
    plugin = plugins.installed("trainer").get(name)
    if plugin is None:
        raise BackendUnavailable(
            f"no trainer named {name!r} is installed (trainers: {', '.join(names())})"
        )
    return cast("Trainer", plugins.load("trainer", plugin))


if TYPE_CHECKING:  # mypy checks every registered trainer against the contract
    from runner.trainers import brax_ppo, rsl_rl_ppo, sb3

    _CONFORMING: tuple[Trainer, ...] = (sb3, brax_ppo, rsl_rl_ppo)
