"""A toy trainer: one module with a class to the `Trainer` contract, added in one process with
`runner.trainers.register` (an installed package's comes by its entry point).

The algorithm `toy_loop` (which it declares it trains by default) "learns" the share of right
moves (`algo.params.right`, 0..1, checked as a cross-field limit would be) and acts by it: enough
to leave the files every trainer leaves (model.zip, eval.json, TensorBoard scalars are optional
here). Its `algo` options are the shared ones (`AlgoSpec`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from runner.backends.base import SB3_VEC_ENV
from runner.errors import FieldProblem
from runner.manifest.algo import AlgoSpec
from runner.manifest.schema import Manifest
from runner.trainers.base import MODEL_FILE, Trainer, digest, spread, write_eval
from runner.trainers.results import (
    BenchResult,
    DeterminismAttempt,
    EvalResult,
    Rate,
    TrainResult,
)


def _episode(cfg: Manifest, right: float, seed: int) -> tuple[float, int]:
    import numpy as np

    from runner.backends import get_backend
    from runner.manifest.schema import ParallelSpec

    venv = get_backend(cfg.env.backend).make_vec_env(
        cfg.env, ParallelSpec(envs=1), seed=seed, log_dir=None
    )
    rng = np.random.default_rng(seed)
    venv.reset()
    total, n, done = 0.0, 0, False
    while not done:
        _, rew, dones, _ = venv.step(np.array([int(rng.random() < right)]))
        total, n, done = total + float(rew[0]), n + 1, bool(dones[0])
    venv.close()
    return total, n


class ToyLoop(Trainer[AlgoSpec]):
    """The toy loop (see the module)."""

    name = "toy_loop"
    ALGORITHMS = ("toy_loop",)
    ENV_INTERFACE = SB3_VEC_ENV

    def check_params(self, cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
        return [
            FieldProblem(("algo", "params", key), "toy_loop takes only 'right'")
            for key in sorted(set(cfg.algo.params) - {"right"})
        ]

    def check_limits(self, cfg: Manifest) -> list[FieldProblem]:
        right = cfg.algo.params.get("right", 1.0)
        if not 0.0 <= right <= 1.0:
            msg = f"expected a share between 0 and 1, got {right}"
            return [FieldProblem(("algo", "params", "right"), msg)]
        return []

    def dry_construct(self, cfg: Manifest) -> None:
        from runner.backends import get_backend

        backend = get_backend(cfg.env.backend)
        venv = backend.make_vec_env(cfg.env, cfg.parallel, seed=0, log_dir=None)
        venv.reset()
        venv.close()

    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
        t0, started = time.perf_counter(), time.time()
        right = cfg.algo.params.get("right", 1.0)
        (unit_dir / MODEL_FILE).write_text(json.dumps({"right": right}))
        wall = time.perf_counter() - t0
        return TrainResult(
            timesteps_done=cfg.train.timesteps,
            train_wall_time_s=wall,
            train_started=started,
            train_steps_per_s=cfg.train.timesteps / max(wall, 1e-9),
            resumed_from=None,
        )

    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
        right = json.loads((unit_dir / MODEL_FILE).read_text())["right"]
        episodes = [_episode(cfg, right, seeds["eval_env"] + i) for i in range(cfg.eval.episodes)]
        returns, lengths = zip(*episodes, strict=True)
        return write_eval(unit_dir, cfg, seeds["eval_env"], list(returns), list(lengths))

    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> DeterminismAttempt:
        ret, n = _episode(cfg, cfg.algo.params.get("right", 1.0), seeds["env"])
        return DeterminismAttempt(
            steps=[], params=digest([ret, n]), env_steps=n, compares="one episode's return"
        )

    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
        t0 = time.perf_counter()
        _, n = _episode(cfg, cfg.algo.params.get("right", 1.0), seeds["env"])
        rate = Rate(steps_per_s=spread([n / (time.perf_counter() - t0)]), steps=n)
        return BenchResult(env_only=rate, train=None, envs=1, vec_env="DummyVecEnv")
