"""Trainer registry: the training loop a unit runs, resolved from the manifest's `algo`.

A trainer is a class implementing the `Trainer` contract in `base.py` (its `algo` options, the
algorithms it trains by default, the env interface it steps, its params and limits, training,
evaluation, bench, determinism attempt) and the abilities it declares (`abilities.py`), found by
its entry point in the group `rlcrate.trainers` (`runner.plugins`: rlcrate's own are declared
there too). A manifest names it with `algo.trainer`, or leaves that out and gets the trainer that
declares `algo.name` among its `ALGORITHMS` (`runner.manifest.algo.default_trainer`): Stable-
Baselines3's algorithms are sb3's, `brax_ppo` and `rsl_rl_ppo` their own loops'. Nothing outside
this package names a trainer.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from runner import plugins
from runner.errors import BackendUnavailable, UserInputError
from runner.manifest.algo import algo_model, default_trainer

if TYPE_CHECKING:
    from runner.manifest.schema import Manifest
    from runner.trainers.abilities import SearchSpaces
    from runner.trainers.base import Trainer


def trainer_for(algo: str, trainer: str | None = None) -> str:
    """The trainer of an algorithm: `trainer` when the manifest names one (`algo.trainer`), else
    the one whose plugin declares it trains `algo` by default. UserInputError (one line) when
    none does (the manifest's validation says so at algo.name first)."""
    if trainer is not None:
        return trainer
    found = default_trainer(algo)
    if found is None:
        from runner.manifest.algo import unknown_algo

        raise UserInputError(unknown_algo(algo))
    return found


def trainer_name(cfg: Manifest) -> str:
    """The name of the trainer a config's units train with."""
    return trainer_for(cfg.algo.name, cfg.algo.trainer)


def trainer_of(cfg: Manifest) -> Trainer[Any]:
    """The trainer a config's units train with."""
    return get_trainer(trainer_name(cfg))


def search_spaces(cfg: Manifest) -> SearchSpaces:
    """The config's trainer as its `SearchSpaces` ability (`tune.space: NAME`); UserInputError,
    one line, for a trainer without it (validate refuses such a manifest first)."""
    from runner.trainers.abilities import SearchSpaces

    trainer = trainer_of(cfg)
    if not isinstance(trainer, SearchSpaces):
        raise UserInputError(f"the {trainer_name(cfg)} trainer knows no search space by name")
    return trainer


def known(name: str) -> bool:
    """Whether `name` is rlcrate's own trainer or one an installed package adds."""
    return plugins.find("trainer", name) is not None


def names() -> list[str]:
    """Every trainer name: this process's, rlcrate's own, then the installed packages'."""
    return plugins.names("trainer")


def register(name: str, target: str) -> None:
    """Add a trainer (`module:Class`) at run time, in this process only (an installed package
    adds one to every process through the `rlcrate.trainers` entry point)."""
    plugins.register("trainer", name, target)
    get_trainer.cache_clear()


def unregister(name: str) -> None:
    """Take back a trainer `register` added."""
    plugins.unregister("trainer", name)
    get_trainer.cache_clear()


@cache
def get_trainer(name: str) -> Trainer[Any]:
    from runner.trainers.base import Trainer

    plugin = plugins.find("trainer", name)
    if plugin is None:
        raise BackendUnavailable(plugins.unknown("trainer", name))
    cls = plugins.load("trainer", plugin)
    if not (isinstance(cls, type) and issubclass(cls, Trainer)):
        raise plugins.not_a("trainer", plugin, "runner.trainers.base.Trainer")
    algo_model(name)  # its Options are an AlgoSpec (one line naming its package if not)
    try:
        trainer: Trainer[Any] = cls()
    except TypeError as exc:  # an abstract hook left out (or a declared ability's)
        raise UserInputError(
            f"the trainer {name!r} of the package {plugin.package} ({plugin.target}) is "
            f"incomplete: {exc}"
        ) from None
    return trainer
