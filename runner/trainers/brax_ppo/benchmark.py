"""The bench job's measurements for Brax's own PPO: both sides of Brax's fused, jitted loop.

Env-only steps/s time `jax.jit` of a `lax.scan` over the vmapped, auto-resetting training env
(the env's training wrapper, as `ppo.train` uses it: Brax's own `wrap`, or
Playground's) with uniform random actions drawn inside the scan:
the rate Brax's trainer sees, not the SB3 adapter's (an `algo: PPO` point on `backend: brax`
measures that one). The first two calls (compilation, and a recompile for the state's weak
types) are timed apart (`compile_s`).

Training steps/s come from `ppo.train` itself: one call of `bench.repeats + 2` epochs of about
`bench.steps` env steps each, Brax's own per-epoch `training/sps`, the first two epochs (which
compile) left out. Env stepping is fused into the trained step, so neither an env fraction nor
a `bench.profile` breakdown is given.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

from runner.manifest.schema import Manifest
from runner.trainers.base import spread
from runner.trainers.results import BenchResult, Rate

WARMUP_CALLS = 2  # untimed calls (env-only) and epochs (training) before the timed ones


def env_only(cfg: Manifest, seed: int) -> Rate:
    import jax

    from runner.trainers.brax_ppo import jax_env

    task = jax_env(cfg)
    base = task.env
    wrap = task.training_wrapper()  # the one ppo.train wraps the env with
    env = wrap(base, episode_length=task.episode_length, action_repeat=task.action_repeat)
    n, spec = cfg.parallel.envs, cfg.bench
    vec_steps = max(1, math.ceil(spec.steps / n))

    @functools.partial(jax.jit, static_argnums=2)
    def roll(state: Any, key: Any, length: int) -> tuple[Any, Any]:
        def body(carry: Any, _: Any) -> tuple[Any, None]:
            state, key = carry
            key, k = jax.random.split(key)
            action = jax.random.uniform(k, (n, base.action_size), minval=-1.0, maxval=1.0)
            return (env.step(state, action), key), None

        (state, key), _ = jax.lax.scan(body, (state, key), None, length=length)
        return state, key

    key_reset, key = jax.random.split(jax.random.PRNGKey(seed))
    t0 = time.perf_counter()
    state = jax.block_until_ready(jax.jit(env.reset)(jax.random.split(key_reset, n)))
    for _ in range(WARMUP_CALLS):  # the first compiles; the second may again (weak types)
        state, key = jax.block_until_ready(roll(state, key, vec_steps))
    compile_s = time.perf_counter() - t0
    rates = []
    for _ in range(spec.repeats):
        t0 = time.perf_counter()
        state, key = jax.block_until_ready(roll(state, key, vec_steps))
        rates.append(n * vec_steps / (time.perf_counter() - t0))
    return Rate(steps_per_s=spread(rates), steps=n * vec_steps, compile_s=compile_s)


def train(cfg: Manifest, seeds: dict[str, int]) -> Rate:
    from brax.training.agents.ppo import train as ppo

    from runner.trainers.brax_ppo import jax_env, ppo_kwargs
    from runner.trainers.brax_ppo.model import network_factory

    spec = cfg.bench
    task = jax_env(cfg)
    kwargs, network = ppo_kwargs(cfg, seeds, task)
    epochs = spec.repeats + WARMUP_CALLS  # the first compiles; the second may again
    kwargs.update(
        num_timesteps=epochs * spec.steps,
        num_evals=epochs + 1,  # ppo.train runs num_evals - 1 epochs
        run_evals=False,
        log_training_metrics=False,
    )
    per_epoch: list[tuple[int, float]] = []
    t0 = time.perf_counter()
    ppo.train(
        environment=task.env,
        network_factory=network_factory(network),
        progress_fn=lambda step, m: per_epoch.append((int(step), float(m["training/sps"]))),
        **kwargs,
    )
    wall = time.perf_counter() - t0
    rates = [sps for _, sps in per_epoch[WARMUP_CALLS:]] or [sps for _, sps in per_epoch]
    steps = per_epoch[-1][0] // len(per_epoch) if per_epoch else 0
    return Rate(
        steps_per_s=spread(rates),
        steps=steps,
        env_fraction=None,
        warmup_epochs_steps_per_s=[sps for _, sps in per_epoch[:WARMUP_CALLS]],
        wall_s=wall,
    )


def bench(cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
    return BenchResult(
        envs=cfg.parallel.envs,
        vec_env="jit(scan(vmap(step)))",
        env_only=env_only(cfg, seeds["env"]),
        train=train(cfg, seeds) if cfg.bench.train else None,
    )  # no `profile`: where a fused XLA step goes is not split into parts
