"""EnvPool backend: its own C++ thread pool, adapted to a Stable-Baselines3 VecEnv.

EnvPool resets a finished env on the *next* step; SB3 expects the reset observation in the same
step with the terminal one in `info["terminal_observation"]`. The adapter resets finished envs
by id right away, which keeps SB3's bootstrapping of truncated episodes correct.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from runner.backends.base import Traits, unknown_id
from runner.errors import BackendUnavailable, FieldError
from runner.manifest.schema import EnvSpec, ParallelSpec
from runner.record.rundir import write_text_atomic

TRAITS = Traits(module="envpool", extra="envpool")


def available() -> str | None:
    if importlib.util.find_spec("envpool") is None:
        return "envpool is not installed (pip install 'rlcrate[envpool]')"
    return None


def _cache_file() -> Path:
    version = importlib.metadata.version("envpool")
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rlcrate"
    return root / f"envpool-{version}-ids.json"


def _catalogue() -> list[str]:
    """EnvPool's env ids; importing envpool costs over a second, so they are cached on disk."""
    reason = available()
    if reason:
        raise BackendUnavailable(reason)
    path = _cache_file()
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    import envpool

    data = sorted(envpool.list_all_envs())
    with contextlib.suppress(OSError):  # a read-only home only costs speed
        write_text_atomic(path, json.dumps(data), durable=False)
    return data


def env_ids() -> list[str]:
    return _catalogue()


def check_env(env: EnvSpec) -> None:
    cat = _catalogue()
    if env.id not in cat:
        raise unknown_id("envpool", env.id, cat)


def spaces(env: EnvSpec) -> tuple[Any, Any]:
    import envpool

    check_env(env)
    from runner.backends.atari import envpool_kwargs

    extra = envpool_kwargs(env.atari) if env.atari else {}
    try:
        spec = envpool.make_spec(env.id, **extra, **env.kwargs)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise FieldError(("env", "kwargs"), f"EnvPool's {env.id} rejected them ({exc})") from None
    return spec.observation_space, spec.action_space


_KINDS = {"Box": "Box", "Discrete": "Discrete", "MultiDiscrete": "MultiDiscrete"}


def action_kind(env: EnvSpec) -> str | None:
    # Atari (*-v5) and classic control are discrete; MuJoCo and the DMC suite are continuous.
    # Known without importing envpool for the common families, otherwise asked of EnvPool.
    check_env(env)
    name = env.id
    if (
        name in ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
        or name.endswith("-v5")
        and not any(
            m in name
            for m in (
                "Cheetah",
                "Hopper",
                "Walker",
                "Ant",
                "Humanoid",
                "Swimmer",
                "Reacher",
                "Pusher",
                "InvertedPendulum",
                "InvertedDoublePendulum",
            )
        )
    ):
        return "Discrete"
    return type(spaces(env)[1]).__name__


def processes(parallel: ParallelSpec) -> int:
    return 0  # EnvPool's threads step every env inside the unit


def nondeterminism(env: EnvSpec) -> str | None:
    return None


def env_files(env: EnvSpec) -> tuple[str, Path] | None:
    return None  # made from an installed package


def step_split(venv: Any) -> Any | None:
    return None


def doctor_rows() -> list[tuple[str, bool, str]]:
    return []


def check_parallel(parallel: ParallelSpec) -> str | None:
    return None  # any envs x threads; `parallel.mode` does not apply


def versions() -> dict[str, dict[str, Any]]:
    return {}  # Python packages only, which provenance records anyway


def interpreter() -> str | None:
    return None


def make_vec_env(env: EnvSpec, parallel: ParallelSpec, *, seed: int, log_dir: Path | None) -> Any:
    """One pool of `parallel.envs` envs stepped by `parallel.workers` threads (no logs)."""
    import envpool

    from runner.backends.atari import envpool_kwargs

    check_env(env)
    preprocessing = envpool_kwargs(env.atari) if env.atari else {}
    pool = envpool.make(
        env.id,
        env_type="gymnasium",
        num_envs=parallel.envs,
        batch_size=parallel.envs,
        num_threads=parallel.workers,
        seed=seed,
        **preprocessing,
        **env.kwargs,
    )
    from runner.backends.envpool.vec import EnvPoolVecEnv

    return EnvPoolVecEnv(pool)
