"""Trainer registry: the training loop a unit runs, resolved from the manifest's algorithm.

Every Stable-Baselines3 / sb3-contrib algorithm is trained by `sb3`; an algorithm with its own
loop (Brax's JAX PPO, RSL-RL's PPO on Isaac Lab) is a trainer of the same name: a module
implementing the `Trainer` contract in `base.py` (its params and limits, the env interface it
steps, training, evaluation, bench, determinism attempt, resume), found by its entry point in the
group `rlcrate.trainers` (`runner.plugins`: rlcrate's own are declared there too) and chosen with
`algo.trainer`. Nothing outside this package names a trainer.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final

from runner import plugins
from runner.errors import BackendUnavailable, UserInputError

if TYPE_CHECKING:
    from runner.manifest.schema import Manifest
    from runner.trainers.base import Trainer

DEFAULT: Final = "sb3"  # trains every algorithm that has no trainer of its own name
# Trainers added at run time, in this process only (`register`); an installed package adds one
# to every process through the `rlcrate.trainers` entry point.
_REGISTERED: dict[str, str] = {}


def _own(name: str) -> bool:
    return name in _REGISTERED or name in plugins.OWN["trainer"]


def trainer_for(algo: str, trainer: str | None = None) -> str:
    """The trainer of an algorithm: `trainer` when the manifest names one (`algo.trainer`), else
    rlcrate's own loop of the algorithm's name, else SB3's (which names an unknown algorithm in
    `check_params`)."""
    if trainer is not None:
        return trainer
    return algo if _own(algo) and algo != DEFAULT else DEFAULT


def trainer_name(cfg: Manifest) -> str:
    """The name of the trainer a config's units train with."""
    return trainer_for(cfg.algo.name, cfg.algo.trainer)


def trainer_of(cfg: Manifest) -> Trainer:
    """The trainer a config's units train with."""
    return get_trainer(trainer_name(cfg))


def known(name: str) -> bool:
    """Whether `name` is rlcrate's own trainer or one an installed package adds."""
    return name in _REGISTERED or plugins.find("trainer", name) is not None


def names() -> list[str]:
    """Every trainer name: rlcrate's own, then the installed packages' (entry points)."""
    return [*_REGISTERED, *(n for n in plugins.names("trainer") if n not in _REGISTERED)]


def register(name: str, target: str) -> None:
    """Add a trainer (`module:Class`) at run time, in this process only (an installed package
    adds one to every process through the `rlcrate.trainers` entry point)."""
    _REGISTERED[name] = target
    get_trainer.cache_clear()


@cache
def get_trainer(name: str) -> Trainer:
    from runner.trainers.base import Trainer

    if name in _REGISTERED:
        plugin = plugins.Plugin(name, _REGISTERED[name], "this process")
    else:
        found = plugins.find("trainer", name)
        if found is None:
            raise BackendUnavailable(plugins.unknown("trainer", name))
        plugin = found
    cls = plugins.load("trainer", plugin)
    if not (isinstance(cls, type) and issubclass(cls, Trainer)):
        raise plugins.not_a("trainer", plugin, "runner.trainers.base.Trainer")
    try:
        return cls()
    except TypeError as exc:  # an abstract hook left out
        raise UserInputError(
            f"the trainer {name!r} of the package {plugin.package} ({plugin.target}) is "
            f"incomplete: {exc}"
        ) from None
