"""What a trainer can do beyond the core contract (`base.Trainer`), each declared by deriving from
its class here: `class MyLoop(Trainer[MyOptions], ColdStart, WarmStarts)`. A declared ability's
methods must be written (a class that lacks one cannot be made); a caller asks
`isinstance(trainer, Ability)`, and where the trainer lacks it does without (one warning) or
refuses (one line). Ray Tune's `Searcher.save` is the model: the default says what the plugin
cannot do, never pretends.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optuna.trial import BaseTrial
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

    from runner.manifest.schema import Manifest

# `check-determinism --resume` sets this to an env step in the killed training's environment: a
# trainer with `KillForResume` sends its own process SIGKILL at its first step at or after it.
from runner.trainers.kill import KILL_ENV as KILL_ENV  # noqa: E402 - the ability's contract


class ColdStart(ABC):
    """It can say when a fresh unit's first env step ends (the bench's cold start)."""

    @abstractmethod
    def first_step(self, cfg: Manifest, seeds: dict[str, int], mark: Callable[[], object]) -> None:
        """Build the env as its units do, step it once, call `mark()` right after that step,
        close it."""


class CountsSteps(ABC):
    """Its models and checkpoints hold the env steps they trained, which it reads back."""

    @abstractmethod
    def saved_steps(self, path: Path) -> int | None:
        """The env steps a model or checkpoint this loop saved says it trained, read from the
        file (never its name); None when it is not readable as one. Without this ability a
        resume trusts a checkpoint's name, and a finished unit its train.json."""


class WarmStarts(ABC):
    """It can start a unit from another run's model (`train.init_from`)."""

    @abstractmethod
    def start_files(self, cfg: Manifest) -> list[str]:
        """The files of a unit trained with `cfg` that a warm start reads, model first. Needs no
        package: `validate` checks that the parent has them."""

    @abstractmethod
    def warm_start_problem(self, parent: Manifest, cfg: Manifest) -> str | None:
        """Why a unit of `cfg` cannot start from a unit trained with `parent` (another
        algorithm, policy or observation scaling), in one line; None when it can. The spaces
        are compared by the caller."""


class SearchSpaces(ABC):
    """It knows search spaces by name (`tune.space: zoo`)."""

    @abstractmethod
    def space_problem(self, cfg: Manifest, name: str) -> str | None:
        """Why `tune.space: NAME` cannot be sampled for `cfg`; None when it can. Needs no heavy
        import (`validate` asks it)."""

    @abstractmethod
    def sample_space(self, cfg: Manifest, name: str, trial: BaseTrial) -> dict[str, Any]:
        """A trial's values from the named space (`trial`: an optuna.Trial, asked with no
        fixed distributions), as dotted manifest path -> value."""


class ExportsPolicy(ABC):
    """Its models are policies `rlcrate export` writes as ONNX (Stable-Baselines3's)."""

    @abstractmethod
    def export_model(
        self, cfg: Manifest, unit_dir: Path, seed: int
    ) -> tuple[BaseAlgorithm, VecEnv]:
        """(model, env): the unit's final model loaded on one env of its own on the CPU (with the
        unit's frozen observation statistics), nothing unpickled; the caller closes the env."""


class PeriodicEval:
    """Its `train` evaluates every `eval.every` steps into the unit's evals.json and stops early
    when the unit's prune request appears (`runner.record.evals`): what a study's pruner needs.
    Without it, validate refuses `eval.every`."""


class RecordsVideo:
    """Its `evaluate` records `eval.video` (the first episodes' frames, `runner.video`). Without
    it, validate refuses `eval.video`."""


class ResumesExactly:
    """A checkpoint holds all its loop needs to continue bit-identically (the optimizer, the
    generators, the rollout in progress, and the envs' state where the backend's envs give it:
    `backends.abilities.ExactResume`). Without it, a resumed unit is `approximate`."""


class KillForResume:
    """Its `train` sends its own process SIGKILL at its first step at or after `KILL_ENV`'s
    value, recording that step first (`runner.trainers.kill.KillHook`, called after every vector
    step), so `check-determinism --resume` can stop the training where it asks and see that it
    did. Without it, that check refuses the trainer (at `algo.trainer`'s line)."""
