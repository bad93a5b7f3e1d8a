"""What a manifest asks of the machine, said before anything starts.

Warnings, not refusals: a manifest meant for a bigger machine may still be run here on purpose.
Each names the variant and what to change.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from runner.record.machine import cpu_count, memory_mb

if TYPE_CHECKING:
    from runner.manifest import Manifest, ResolvedRun

PROCESS_MB = 150  # a gymnasium worker or a Godot game process, measured on CartPole/BallChase
UNIT_MB = 500  # the unit process itself: torch, SB3, the model
ON_POLICY_DEFAULT_STEPS = {"PPO": 2048, "A2C": 5, "RecurrentPPO": 128, "TRPO": 2048}


def processes_per_unit(config: Manifest) -> int:
    """Env processes one unit starts (gymnasium subproc workers, Godot games); threads excluded."""
    from runner.backends import get_backend

    return get_backend(config.env.backend).processes(config.parallel)


def overshoot(config: Manifest) -> tuple[int, int] | None:
    """(steps per update, steps actually trained) when an on-policy rollout overshoots the
    budget: SB3 collects whole rollouts of envs x n_steps."""
    algo = config.algo
    default = ON_POLICY_DEFAULT_STEPS.get(algo.name)
    n_steps = algo.params.get("n_steps", default)
    if default is None or not isinstance(n_steps, int) or n_steps < 1:
        return None
    rollout = n_steps * config.parallel.envs
    budget = config.train.timesteps
    trained = math.ceil(budget / rollout) * rollout
    return (rollout, trained) if trained > budget * 1.5 else None


MAX_CHECKPOINTS = 100  # per unit; more is a disk filler, not a safety net


def checkpoints(config: Manifest) -> int:
    """Checkpoints one unit saves: one per `checkpoint_every` steps, at most one per vector step
    (the trainer checks once per step of all envs)."""
    every = config.train.checkpoint_every
    if every <= 0:
        return 0
    per = max(every, config.parallel.envs)
    return config.train.timesteps // per


def warnings(res: ResolvedRun, units_at_once: int) -> list[str]:
    """One line per thing this run asks that the machine or the step budget cannot give."""
    cpus, mem = cpu_count(), memory_mb()
    out = []
    for name, variant in res.variants.items():
        cfg = variant.config
        procs = processes_per_unit(cfg) * units_at_once
        need = units_at_once * UNIT_MB + procs * PROCESS_MB
        if procs > 2 * cpus:
            out.append(
                f"variant {name}: {procs} env processes on {cpus} CPUs (about "
                f"{need / 1024:.1f} GB of memory) will be slower, not faster; lower "
                "parallel.envs, or use mode: dummy or the envpool backend"
            )
        if mem is not None and need > mem:
            out.append(
                f"variant {name}: needs about {need / 1024:.1f} GB of memory, "
                f"{mem / 1024:.1f} GB is free; lower parallel.envs or parallel.units"
            )
        over = overshoot(cfg)
        if over:
            rollout, trained = over
            out.append(
                f"variant {name}: one update collects parallel.envs x n_steps = {rollout} steps, "
                f"so it trains {trained} steps for train.timesteps = "
                f"{cfg.train.timesteps}; lower parallel.envs or algo.params.n_steps"
            )
        many = checkpoints(cfg)
        if many > MAX_CHECKPOINTS:
            out.append(
                f"variant {name}: train.checkpoint_every = {cfg.train.checkpoint_every} "
                f"saves {many:,} checkpoints per unit (each a full model) for "
                f"{cfg.train.timesteps:,} steps; raise it to at least "
                f"{-(-cfg.train.timesteps // MAX_CHECKPOINTS):,}"
            )
        threads = cfg.algo.threads()
        if threads > cpus:
            out.append(
                f"variant {name}: algo.torch_threads = {threads} on {cpus} CPUs; use at most {cpus}"
            )
    return out
