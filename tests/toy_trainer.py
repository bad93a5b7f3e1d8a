"""A toy trainer: one module with a class to the `Trainer` contract, added in one process with
`runner.trainers.register` (an installed package's comes by its entry point).

The algorithm `toy_loop` "learns" the share of right moves (`algo.params.right`, 0..1, checked
against `parallel.envs` as a cross-field limit would be) and acts by it: enough to leave the
files every trainer leaves (model.zip, eval.json, TensorBoard scalars are optional here).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from runner.backends.base import SB3_VEC_ENV
from runner.errors import FieldProblem
from runner.manifest.schema import Manifest
from runner.trainers.base import MODEL_FILE, Trainer, digest, write_eval

ENV_INTERFACE = SB3_VEC_ENV


def check_params(cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
    return [
        FieldProblem(("algo", "params", key), "toy_loop takes only 'right'")
        for key in sorted(set(cfg.algo.params) - {"right"})
    ]


def check_limits(cfg: Manifest) -> list[FieldProblem]:
    right = cfg.algo.params.get("right", 1.0)
    if not 0.0 <= right <= 1.0:
        msg = f"expected a share between 0 and 1, got {right}"
        return [FieldProblem(("algo", "params", "right"), msg)]
    return []


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


def start_files(cfg: Manifest) -> list[str] | None:
    return None  # the toy loop has no warm starts


def dry_construct(cfg: Manifest) -> None:
    from runner.backends import get_backend

    venv = get_backend(cfg.env.backend).make_vec_env(cfg.env, cfg.parallel, seed=0, log_dir=None)
    venv.reset()
    venv.close()


def deep_only(cfg: Manifest) -> list[str]:
    return []


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    t0, started = time.perf_counter(), time.time()
    (unit_dir / MODEL_FILE).write_text(json.dumps({"right": cfg.algo.params.get("right", 1.0)}))
    wall = time.perf_counter() - t0
    return {
        "timesteps_done": cfg.train.timesteps,
        "train_wall_time_s": wall,
        "train_started": started,
        "train_steps_per_s": cfg.train.timesteps / max(wall, 1e-9),
        "resumed_from": None,
    }


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    right = json.loads((unit_dir / MODEL_FILE).read_text())["right"]
    episodes = [_episode(cfg, right, seeds["eval_env"] + i) for i in range(cfg.eval.episodes)]
    returns, lengths = zip(*episodes, strict=True)
    return write_eval(unit_dir, cfg, seeds["eval_env"], list(returns), list(lengths))


def determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> dict[str, Any]:
    ret, n = _episode(cfg, cfg.algo.params.get("right", 1.0), seeds["env"])
    return {
        "steps": [],
        "params": digest([ret, n]),
        "env_steps": n,
        "compares": "one episode's return",
    }


def bench(cfg: Manifest, seeds: dict[str, int]) -> dict[str, Any]:
    return {"env_only": None, "train": None, "envs": 1, "vec_env": "DummyVecEnv"}


class ToyLoop(Trainer):
    """The toy loop (see the module)."""

    name = "toy_loop"
    ENV_INTERFACE = ENV_INTERFACE

    # the hooks are this module's functions
    check_params = staticmethod(check_params)
    check_limits = staticmethod(check_limits)
    dry_construct = staticmethod(dry_construct)
    deep_only = staticmethod(deep_only)
    train = staticmethod(train)
    evaluate = staticmethod(evaluate)
    start_files = staticmethod(start_files)
    determinism_attempt = staticmethod(determinism_attempt)
    bench = staticmethod(bench)
