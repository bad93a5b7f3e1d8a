"""The bench job's measurements for RSL-RL's PPO on an Isaac Lab task.

Env-only steps/s step Isaac Lab's `RslRlVecEnvWrapper` (what `OnPolicyRunner` steps) with uniform
random actions in [-1, 1] on the task's device. Training steps/s time `OnPolicyRunner.learn`
itself, one call per repeat of enough iterations for about `bench.steps` env steps, after one
untimed warm-up iteration; the env fraction is the share of that time spent inside the
wrapper's `step`.
"""

from __future__ import annotations

import math
import time
from typing import Any

from runner.manifest.schema import Manifest
from runner.trainers.base import spread
from runner.trainers.results import BenchResult, Rate


def env_only(env: Any, cfg: Manifest) -> Rate:
    import torch

    n, spec = env.num_envs, cfg.bench
    vec_steps = max(1, math.ceil(spec.steps / n))
    shape = (n, env.num_actions)

    def loop(count: int) -> float:
        actions = [torch.rand(shape, device=env.device) * 2 - 1 for _ in range(count)]
        t0 = time.perf_counter()
        for a in actions:
            env.step(a)
        return time.perf_counter() - t0

    with torch.inference_mode():
        if spec.warmup:
            loop(math.ceil(spec.warmup / n))
        rates = [n * vec_steps / loop(vec_steps) for _ in range(spec.repeats)]
    return Rate(steps_per_s=spread(rates), steps=n * vec_steps)


def train(env: Any, agent: Any, cfg: Manifest) -> Rate:
    from runner.trainers.rsl_rl_ppo import _runner, iteration_steps

    runner = _runner(env, agent, None)
    batch = iteration_steps(agent, env.num_envs)
    iters = max(1, math.ceil(cfg.bench.steps / batch))
    inner, spent = env.step, [0.0]

    def timed_step(actions: Any) -> Any:
        t0 = time.perf_counter()
        out = inner(actions)
        spent[0] += time.perf_counter() - t0
        return out

    env.step = timed_step
    try:
        runner.learn(num_learning_iterations=1)  # allocations, first-call costs
        rates, fractions = [], []
        for _ in range(cfg.bench.repeats):
            spent[0] = 0.0
            t0 = time.perf_counter()
            runner.learn(num_learning_iterations=iters)
            wall = time.perf_counter() - t0
            rates.append(iters * batch / wall)
            fractions.append(spent[0] / wall)
    finally:
        env.step = inner
    return Rate(
        steps_per_s=spread(rates),
        steps=iters * batch,
        env_fraction=float(sum(fractions) / len(fractions)),
    )


def bench(cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
    from runner.trainers.rsl_rl_ppo import _setup

    env, agent, end = _setup(cfg, None, cfg.parallel.envs, seeds["env"], seeds)
    try:
        return BenchResult(
            envs=env.num_envs,
            vec_env="RslRlVecEnvWrapper",
            env_only=env_only(env, cfg),
            train=train(env, agent, cfg) if cfg.bench.train else None,
        )
    finally:
        env.close()
        end()
