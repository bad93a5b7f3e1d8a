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
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.backends import atari
from runner.backends.abilities import Video, ZooIds
from runner.backends.base import Backend, Traits, no_video, unknown_id, video_problems
from runner.errors import BackendUnavailable, FieldError, FieldProblem, first_error
from runner.manifest.schema import EnvSpec, ParallelSpec
from runner.record.rundir import write_text_atomic

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv


@contextlib.contextmanager
def _own_spaces() -> Iterator[None]:
    """EnvPool builds its Gymnasium spaces from float64 bounds with dtype float32, and Gymnasium
    warns of the lowered precision each time (`Box low's precision lowered`): EnvPool's detail,
    not the user's, printed around rlcrate's own lines (`rlcrate export`'s one)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r".*Box (low|high)'s precision lowered", UserWarning)
        yield


class EnvPoolEnv(atari.AtariOption):
    """The envpool backend's env options."""


def _available() -> str | None:
    if importlib.util.find_spec("envpool") is None:
        return "envpool is not installed (pip install 'rlcrate[envpool]')"
    return None


def _cache_file() -> Path:
    version = importlib.metadata.version("envpool")
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rlcrate"
    return root / f"envpool-{version}-ids.json"


def _catalogue() -> list[str]:
    """EnvPool's env ids; importing envpool costs over a second, so they are cached on disk."""
    reason = _available()
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


# Atari (*-v5) and classic control are discrete; MuJoCo and the DMC suite are continuous.
CONTINUOUS_V5 = (
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


def _is_atari(env_id: str) -> bool:
    return env_id.endswith("-v5") and not any(m in env_id for m in CONTINUOUS_V5)


class EnvPool(Backend[EnvPoolEnv], Video[EnvPoolEnv], ZooIds):
    """EnvPool's C++ thread pool, adapted to a Stable-Baselines3 VecEnv (see the module)."""

    name = "envpool"
    example_id = "CartPole-v1"
    Options = EnvPoolEnv
    TRAITS = Traits(
        module="envpool",
        extra="envpool",
        resume="EnvPool's C++ thread pool holds its envs' state, which it cannot save",
        video_needs="the equivalent Gymnasium env (EnvPool's vectorised envs render nothing): "
        "the gymnasium backend, and ale-py for an Atari game",
    )

    def available(self) -> str | None:
        return _available()

    def env_ids(self) -> list[str]:
        return _catalogue()

    def check_env(self, env: EnvPoolEnv) -> list[FieldProblem]:
        cat = _catalogue()
        if env.id not in cat:
            return [unknown_id("envpool", env.id, cat)]
        return atari.problems(
            env, games="EnvPool's *-v5 ids", is_game=_is_atari(env.id), owned=atari.ENVPOOL_OWNED
        )

    def gymnasium_id(self, env_id: str) -> str | None:
        return env_id  # EnvPool names its envs as Gymnasium does (CartPole-v1, Pong-v5)

    def _equivalent(self, env: EnvPoolEnv) -> Any:
        """The Gymnasium env EnvPool's `env` stands for: the same id (ALE/<game> for an Atari
        game), the same Atari preprocessing (`backends.atari`: one model for both backends)."""
        from runner.backends import get_backend

        gym_id = f"ALE/{env.id}" if _is_atari(env.id) else env.id
        options: Any = get_backend("gymnasium").Options  # gymnasium's own, with env.atari
        return options(backend="gymnasium", id=gym_id, atari=env.atari, kwargs=dict(env.kwargs))

    def check_video(self, env: EnvPoolEnv) -> list[FieldProblem]:
        from runner.backends import get_backend, names

        if "gymnasium" not in names():
            return no_video(self)
        gym = get_backend("gymnasium")
        if gym.available() is not None:
            return no_video(self)
        equivalent = self._equivalent(env)
        found = gym.check_env(equivalent) or video_problems(gym, equivalent)
        return [
            FieldProblem(
                p.path,
                f"recorded through Gymnasium's {equivalent.id} (EnvPool renders nothing), "
                f"which {p.message[0].lower()}{p.message[1:]}",
            )
            for p in found
        ]

    def video_equivalent(self, env: EnvPoolEnv) -> tuple[EnvSpec, str]:
        from runner.backends import get_backend

        first_error(self.check_video(env))
        equivalent = self._equivalent(env)
        note = (
            f"the same policy on Gymnasium's {equivalent.id} with the same preprocessing, an "
            f"equivalent env: EnvPool's vectorised {env.id} renders nothing, so these are not "
            "the episodes eval.json scores"
        )
        gym = get_backend("gymnasium")
        if not isinstance(gym, Video):  # check_video found it records videos
            raise BackendUnavailable("the gymnasium backend records no videos")
        return gym.video_env(equivalent), note

    def is_atari(self, env_id: str) -> bool:
        return _is_atari(env_id)

    def spaces(self, env: EnvPoolEnv) -> tuple[Any, Any]:
        import envpool

        self.require_env(env)
        extra = atari.envpool_kwargs(env.atari) if env.atari else {}
        with _own_spaces():
            try:
                spec = envpool.make_spec(env.id, **extra, **env.kwargs)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise FieldError(
                    ("env", "kwargs"), f"EnvPool's {env.id} rejected them ({exc})"
                ) from None
            return spec.observation_space, spec.action_space

    def action_kind(self, env: EnvPoolEnv) -> str | None:
        # Known without importing envpool for the common families, otherwise asked of EnvPool.
        self.require_env(env)
        if env.id in ("CartPole-v1", "Acrobot-v1", "MountainCar-v0") or _is_atari(env.id):
            return "Discrete"
        return type(self.spaces(env)[1]).__name__

    def make_vec_env(
        self, env: EnvPoolEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        """One pool of `parallel.envs` envs stepped by `parallel.workers` threads (no logs)."""
        import envpool

        self.require_env(env)
        preprocessing = atari.envpool_kwargs(env.atari) if env.atari else {}
        from runner.backends.envpool.vec import EnvPoolVecEnv

        with _own_spaces():
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
            return EnvPoolVecEnv(pool)
