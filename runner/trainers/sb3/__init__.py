"""The Stable-Baselines3 trainer (every SB3 / sb3-contrib algorithm), to the contract in `base.py`.

`train` (`training`) learns for `train.timesteps` with TensorBoard per unit, checkpoints and a
final model.zip; interrupted (Ctrl-C, SIGTERM), it saves a checkpoint and the next `--resume`
continues from the newest one, exactly where the backend's envs can be replayed (`exact`).
`evaluate` (`evaluation`) runs the fixed evaluation protocol. Its `algo` options are
`options.SB3Options`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.backends.base import SB3_VEC_ENV
from runner.errors import FieldProblem
from runner.manifest.schema import Manifest
from runner.trainers.abilities import (
    ColdStart,
    CountsSteps,
    ExportsPolicy,
    KillForResume,
    PeriodicEval,
    RecordsVideo,
    ResumesExactly,
    SearchSpaces,
    WarmStarts,
)
from runner.trainers.base import Trainer
from runner.trainers.results import BenchResult, DeterminismAttempt, EvalResult, TrainResult
from runner.trainers.sb3 import algos
from runner.trainers.sb3.options import SB3Options

if TYPE_CHECKING:
    from optuna.trial import BaseTrial
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv


class SB3(
    Trainer[SB3Options],
    ColdStart,
    CountsSteps,
    WarmStarts,
    SearchSpaces,
    ExportsPolicy,
    PeriodicEval,
    RecordsVideo,
    ResumesExactly,
    KillForResume,
):
    """Every Stable-Baselines3 and sb3-contrib algorithm, on the backend's VecEnv."""

    name = "sb3"
    Options = SB3Options
    ALGORITHMS = tuple(algos.ALGOS)
    ENV_INTERFACE = SB3_VEC_ENV  # every backend's: Stable-Baselines3 steps a VecEnv
    QUICK_EXIT = True  # training closes the TensorBoard logger; every env is closed

    def check_params(self, cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
        """A known algorithm, its constructor's argument names, the action spaces it supports;
        then what the installed sources say of its policy, device and params (`checks`)."""
        from runner.trainers.sb3.checks import sb3_issues

        algo = self.options(cfg)
        found = algos.check(algo.name, algo.params, action_kind)
        out = [FieldProblem(("algo", *found[0].split(".")), found[1])] if found else []
        issues = sb3_issues(algo.name, algo.policy, algo.params, algo.device)
        return out + [FieldProblem(("algo", *loc), msg) for loc, msg in issues]

    def check_limits(self, cfg: Manifest) -> list[FieldProblem]:
        return []  # what SB3 refuses is found by the dry construction (`validate --deep`)

    def dry_construct(self, cfg: Manifest) -> None:
        """One env of the backend, the model on it, one action (`dry.dry_construct`)."""
        from runner.trainers.sb3.dry import dry_construct as build

        build(cfg)

    def deep_only(self, cfg: Manifest) -> list[str]:
        """What plain validate could not check from SB3's sources (`checks.deep_only`)."""
        from runner.trainers.sb3.checks import deep_only as unchecked

        algo = self.options(cfg)
        return unchecked(algo.name, algo.policy, algo.params)

    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
        from runner.trainers.sb3.training import train

        return train(cfg, unit_dir, seeds)

    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
        from runner.trainers.sb3.evaluation import evaluate

        return evaluate(cfg, unit_dir, seeds)

    def model_files(self, cfg: Manifest) -> list[str]:
        return self.start_files(cfg)

    def saved_steps(self, path: Path) -> int | None:
        from runner.trainers.sb3.checkpoints import saved_steps

        return saved_steps(path)

    def start_files(self, cfg: Manifest) -> list[str]:
        from runner.trainers.sb3.warm import start_files

        return start_files(cfg)

    def warm_start_problem(self, parent: Manifest, cfg: Manifest) -> str | None:
        from runner.trainers.sb3.warm import parent_problem

        return parent_problem(parent, cfg)

    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> DeterminismAttempt:
        from runner.trainers.sb3.determinism import attempt

        return attempt(cfg, seeds, steps)

    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
        from runner.trainers.sb3.benchmark import measure_sb3

        return measure_sb3(cfg, seeds)

    def first_step(self, cfg: Manifest, seeds: dict[str, int], mark: Callable[[], object]) -> None:
        from runner.trainers.sb3.benchmark import first_step

        first_step(cfg, seeds, mark)

    def space_problem(self, cfg: Manifest, name: str) -> str | None:
        """`tune.space: zoo`: rl-zoo3's sampler for the algorithm (`zoo_space`)."""
        if name != "zoo":
            return f"the sb3 trainer knows one search space by name, zoo (got {name!r})"
        from runner.trainers.sb3.zoo_space import problem

        return problem(cfg)

    def sample_space(self, cfg: Manifest, name: str, trial: BaseTrial) -> dict[str, Any]:
        from runner.trainers.sb3.zoo_space import sample

        return sample(cfg, trial)

    def export_model(
        self, cfg: Manifest, unit_dir: Path, seed: int
    ) -> tuple[BaseAlgorithm, VecEnv]:
        from runner.trainers.sb3.export import export_model

        return export_model(cfg, unit_dir, seed)
