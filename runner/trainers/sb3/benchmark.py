"""Measuring one bench point trained by Stable-Baselines3: env-only, env + policy inference and
training steps/s, the first step of a fresh process, and the harness's own cost.

Env-only steps/s step the same VecEnv training uses (`trainers.sb3.common.make_env`) with random
actions drawn before timing; env + inference steps/s step it with the actions the manifest's
policy, built as training builds it, chooses (`predict`, stochastic as in a rollout, no update);
training steps/s run the manifest's algorithm for `bench.steps` after
a warm-up of `bench.warmup` steps (at least one rollout/update). Each is repeated `bench.repeats`
times: median, min and max. During training a thin VecEnv wrapper adds up the time spent in
step_async/step_wait, giving the fraction of training time spent stepping envs.

The harness's own cost (loop, clock reads, the timing wrapper) is measured on a no-op env and
reported as a fraction of the measured steps/s (`overhead` in bench.json).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from runner.manifest.schema import Manifest
from runner.trainers.base import spread
from runner.trainers.results import BenchResult, Harness, Profile, Rate

ACTION_BATCHES = 64  # distinct random action batches, cycled through while timing


def _action_batches(space: Any, n_envs: int, seed: int) -> list[np.ndarray]:
    space.seed(seed)
    return [np.stack([space.sample() for _ in range(n_envs)]) for _ in range(ACTION_BATCHES)]


def _timed_loop(venv: Any, actions: list[np.ndarray], vec_steps: int) -> float:
    seq = [actions[i % len(actions)] for i in range(vec_steps)]  # built before the clock starts
    step = venv.step
    t0 = time.perf_counter()
    for a in seq:
        step(a)
    return time.perf_counter() - t0


def measure_env(venv: Any, spec: Any, seed: int) -> Rate:
    """Env-only steps/s with random actions: warm-up, then `repeats` timed runs of `steps`."""
    n = venv.num_envs
    actions = _action_batches(venv.action_space, n, seed)
    vec_steps = max(1, math.ceil(spec.steps / n))
    venv.reset()
    if spec.warmup:
        _timed_loop(venv, actions, math.ceil(spec.warmup / n))
    rates = [n * vec_steps / _timed_loop(venv, actions, vec_steps) for _ in range(spec.repeats)]
    return Rate(steps_per_s=spread(rates), steps=n * vec_steps)


def measure_inference(cfg: Manifest, venv: Any, seeds: dict[str, int]) -> Rate:
    """Env + policy inference steps/s: the untrained policy chooses every action."""
    from runner.trainers.sb3.common import make_model

    spec, n = cfg.bench, venv.num_envs
    model = make_model(cfg, venv, seed=seeds["model"], tb_dir=None)
    vec_steps = max(1, math.ceil(spec.steps / n))
    obs = [venv.reset()]

    def loop(k: int) -> float:
        predict, step = model.predict, venv.step
        t0 = time.perf_counter()
        for _ in range(k):
            actions, _ = predict(obs[0], deterministic=False)
            obs[0] = step(actions)[0]
        return time.perf_counter() - t0

    if spec.warmup:
        loop(math.ceil(spec.warmup / n))
    rates = [n * vec_steps / loop(vec_steps) for _ in range(spec.repeats)]
    return Rate(steps_per_s=spread(rates), steps=n * vec_steps)


def first_step(cfg: Manifest, seeds: dict[str, int], mark: Any) -> None:
    """A fresh unit's start, to the end of its env's first vector step (the bench's cold start):
    the VecEnv its training uses, one step of random actions."""
    from runner.trainers.sb3.common import make_env

    venv = make_env(cfg, seed=seeds["env"])
    try:
        venv.reset()
        venv.action_space.seed(seeds["env"])
        venv.step(np.stack([venv.action_space.sample() for _ in range(venv.num_envs)]))
        mark()
    finally:
        venv.close()


def _step_timer(venv: Any) -> Any:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class StepTimer(VecEnvWrapper):
        """Adds up the seconds from step_async to the end of step_wait (two clock reads)."""

        def __init__(self, inner: Any) -> None:
            super().__init__(inner)
            self.seconds = 0.0
            self._t0 = 0.0

        def reset(self) -> Any:
            return self.venv.reset()

        def step_async(self, actions: np.ndarray) -> None:
            self._t0 = time.perf_counter()
            self.venv.step_async(actions)

        def step_wait(self) -> Any:
            out = self.venv.step_wait()
            self.seconds += time.perf_counter() - self._t0
            return out

    return StepTimer(venv)


def measure_train(cfg: Manifest, venv: Any, seeds: dict[str, int]) -> Rate:
    """Training steps/s and the fraction of training time spent stepping envs."""
    from runner.trainers.sb3.common import make_model

    spec = cfg.bench
    timer = _step_timer(venv)
    model = make_model(cfg, timer, seed=seeds["model"], tb_dir=None)
    model.learn(max(spec.warmup, 1))  # at least one rollout and update: allocations, caches
    rates, fractions, done = [], [], 0
    for _ in range(spec.repeats):
        before, timer.seconds = model.num_timesteps, 0.0
        t0 = time.perf_counter()
        model.learn(spec.steps, reset_num_timesteps=False)
        elapsed = time.perf_counter() - t0
        done = model.num_timesteps - before
        rates.append(done / elapsed)
        fractions.append(timer.seconds / elapsed)
    return Rate(steps_per_s=spread(rates), steps=done, env_fraction=float(np.median(fractions)))


def harness_overhead(iterations: int = 20_000) -> Harness:
    """Seconds per vector step the harness adds: the timed loop, and the timing wrapper."""
    from gymnasium import spaces

    class Null:
        num_envs, observation_space, action_space = 1, spaces.Discrete(2), spaces.Discrete(2)

        def get_attr(self, name: str, indices: Any = None) -> list[Any]:
            return [None]

        def step(self, a: Any) -> None:
            return None

        def step_async(self, a: Any) -> None:
            return None

        def step_wait(self) -> None:
            return None

    null, actions = Null(), [np.zeros(1)]
    loop = min(_timed_loop(null, actions, iterations) for _ in range(3)) / iterations
    timer = _step_timer(null)

    def pair(v: Any) -> float:
        t0 = time.perf_counter()
        for _ in range(iterations):
            v.step_async(None)
            v.step_wait()
        return time.perf_counter() - t0

    wrapped = min(pair(timer) - pair(null) for _ in range(3)) / iterations
    return Harness(loop_s_per_vector_step=loop, timer_s_per_vector_step=max(wrapped, 0.0))


def measure_sb3(cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
    """A point trained by Stable-Baselines3: env-only steps/s on the VecEnv training uses, env +
    policy inference and training steps/s with the manifest's algorithm, and the profile when
    asked for."""
    from runner.trainers.sb3.common import make_env

    venv = make_env(cfg, seed=seeds["env"])
    try:
        inner = getattr(venv, "venv", venv)
        out = BenchResult(
            envs=venv.num_envs,
            vec_env=type(inner).__name__,
            env_only=measure_env(venv, cfg.bench, seeds["env"]),
            inference=measure_inference(cfg, venv, seeds) if cfg.bench.inference else None,
            train=measure_train(cfg, venv, seeds) if cfg.bench.train else None,
        )
        if cfg.bench.profile:
            from runner.trainers.sb3.profile import profile_train

            out.profile = Profile.model_validate(profile_train(cfg, venv, seeds))
        out.harness = harness_overhead()  # what its timing loop and step timer add
        return out
    finally:
        venv.close()
