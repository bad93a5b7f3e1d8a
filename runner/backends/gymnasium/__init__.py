"""Gymnasium backend: any registered id, DummyVecEnv or SubprocVecEnv by `parallel.mode`.

Ids in the `rlcrate/` namespace are rlcrate's own (`rlcrate/BallChaseSim-v0`, the BallChase
surrogate): they step every env in one NumPy call, in-process, whatever `parallel.mode` says.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from runner.backends import atari
from runner.backends.base import Traits, unknown_id
from runner.errors import BackendUnavailable, FieldError
from runner.manifest.schema import EnvSpec, ParallelSpec

# Modules that register extra ids with Gymnasium when imported, by id namespace. Imported only
# when an id needs them (ale_py alone costs seconds).
PLUGINS = {"ALE": "ale_py", "rlcrate": "runner.backends.gymnasium.ballchase"}
SURROGATE = "rlcrate/BallChaseSim-v0"
TRAITS = Traits(module="gymnasium", extra="gymnasium")


def available() -> str | None:
    if importlib.util.find_spec("gymnasium") is None:
        return "gymnasium is not installed (pip install 'rlcrate[gymnasium]')"
    return None


def _registry(env_id: str | None = None) -> dict[str, Any]:
    """Gymnasium's registry, with the plugin for `env_id`'s namespace (all plugins for None)."""
    reason = available()
    if reason:
        raise BackendUnavailable(reason)
    import gymnasium as gym

    _register_plugins(env_id)
    return gym.registry


def _register_plugins(env_id: str | None) -> None:
    import gymnasium as gym

    namespace = env_id.split("/")[0] if env_id and "/" in env_id else None
    for ns, module in PLUGINS.items():
        if (env_id is None or ns == namespace) and importlib.util.find_spec(module) is not None:
            gym.register_envs(importlib.import_module(module))


def env_ids() -> list[str]:
    return sorted(_registry())


def check_env(env: EnvSpec) -> None:
    registry = _registry(env.id)
    if env.id not in registry:
        registry = _registry()  # every plugin, so the error lists the same ids every time
        raise unknown_id("gymnasium", env.id, registry)
    if env.id == SURROGATE:
        from runner.backends.gymnasium import ballchase

        ballchase.config(_sim_kwargs(env))


def _sim_kwargs(env: EnvSpec) -> dict[str, Any]:
    if "action_repeat" in env.kwargs:
        raise FieldError(
            ("env", "kwargs", "action_repeat"),
            f"{SURROGATE} takes env.action_repeat (as the godot backend does), not a kwarg",
        )
    return {**env.kwargs, "action_repeat": env.action_repeat}


def processes(parallel: ParallelSpec) -> int:
    return parallel.envs if parallel.mode == "subproc" else 0


def nondeterminism(env: EnvSpec) -> str | None:
    return None


def env_files(env: EnvSpec) -> tuple[str, Path] | None:
    return None  # made from an installed package


def step_split(venv: Any) -> Any | None:
    return None


def doctor_rows() -> list[tuple[str, bool, str]]:
    return []


def check_parallel(parallel: ParallelSpec) -> str | None:
    if parallel.mode == "subproc" and parallel.workers != parallel.envs:
        return (
            "gymnasium's SubprocVecEnv runs one process per env; set parallel.workers to "
            f"parallel.envs ({parallel.envs})"
        )
    if parallel.mode == "dummy" and parallel.workers != 1:
        return "gymnasium's DummyVecEnv steps every env in one process; set parallel.workers: 1"
    return None


def versions() -> dict[str, dict[str, Any]]:
    return {}  # Python packages only, which provenance records anyway


def interpreter() -> str | None:
    return None


def action_kind(env: EnvSpec) -> str | None:
    if env.id.startswith("ALE/"):
        check_env(env)
        return "Discrete"  # every Atari game; making one costs seconds (and prints a banner)
    return type(spaces(env)[1]).__name__


def spaces(env: EnvSpec) -> tuple[Any, Any]:
    import gymnasium as gym

    check_env(env)
    try:
        e = gym.make(env.id, **env.kwargs)
    except TypeError as exc:
        raise FieldError(("env", "kwargs"), f"{env.id} rejected them ({exc})") from None
    try:
        return e.observation_space, e.action_space
    finally:
        e.close()


def _maker(env_id: str, kwargs: dict[str, Any], seed: int, atari_spec: Any = None):
    def make():
        import gymnasium as gym

        _register_plugins(env_id)
        e = gym.make(env_id, **kwargs)
        e.action_space.seed(seed)
        return atari.wrap_env(e, atari_spec) if atari_spec else e

    return make


def make_vec_env(env: EnvSpec, parallel: ParallelSpec, *, seed: int, log_dir: Path | None) -> Any:
    """`parallel.envs` envs; SubprocVecEnv runs one process each (`parallel.workers` is checked
    by `check_parallel`, not used); gymnasium writes no logs of its own."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from runner.backends._subproc import BoundedSubprocVecEnv

    check_env(env)
    if env.id == SURROGATE:
        from runner.backends.gymnasium import ballchase, ballchase_vec

        cfg = ballchase.config(_sim_kwargs(env))
        return ballchase_vec.BallChaseVecEnv(cfg, n_envs=parallel.envs, seed=seed)
    mode = parallel.mode
    kwargs = atari.gym_kwargs(env)
    fns = [_maker(env.id, kwargs, seed + i, env.atari) for i in range(parallel.envs)]
    # subproc even for one env (a benchmark of subproc must measure subproc); forkserver, so
    # workers do not inherit the parent's torch threads or signal handlers; bounded, so a dead
    # or hung worker fails the unit instead of hanging it
    venv: Any = (
        BoundedSubprocVecEnv(fns, start_method="forkserver")
        if mode == "subproc"
        else DummyVecEnv(fns)
    )
    venv.seed(seed)  # env i gets seed + i on its next reset
    return atari.stack(venv, env.atari) if env.atari else venv
