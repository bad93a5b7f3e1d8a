"""Gymnasium backend: any registered id, DummyVecEnv or SubprocVecEnv by `parallel.mode`.

Ids in the `rlcrate/` namespace are rlcrate's own (`rlcrate/BallChaseSim-v0`, the BallChase
surrogate): they step every env in one NumPy call, in-process, whatever `parallel.mode` says.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.backends import atari
from runner.backends.abilities import ExactResume, Video, ZooIds
from runner.backends.base import (
    GYMNASIUM_ENV,
    SB3_VEC_ENV,
    Backend,
    RepeatsActions,
    Traits,
    unknown_id,
)
from runner.errors import BackendUnavailable, FieldError, FieldProblem, first_error, first_line
from runner.manifest.schema import ParallelSpec

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

# Modules that register extra ids with Gymnasium when imported, by id namespace. Imported only
# when an id needs them (ale_py alone costs seconds).
PLUGINS = {"ALE": "ale_py", "rlcrate": "runner.backends.gymnasium.ballchase"}
SURROGATE = "rlcrate/BallChaseSim-v0"


class GymnasiumEnv(RepeatsActions, atari.AtariOption):
    """The gymnasium backend's env options (`action_repeat`: the BallChase surrogate's only)."""

    parallel_modes = ("dummy", "subproc")


def _available() -> str | None:
    if importlib.util.find_spec("gymnasium") is None:
        return "gymnasium is not installed (pip install 'rlcrate[gymnasium]')"
    return None


def _registry(env_id: str | None = None) -> dict[str, Any]:
    """Gymnasium's registry, with the plugin for `env_id`'s namespace (all plugins for None)."""
    reason = _available()
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
            plugin = importlib.import_module(module)
            if module == "ale_py":
                _quiet_ale(plugin)
            gym.register_envs(plugin)


def _quiet_ale(ale_py: Any) -> None:
    """The Arcade Learning Environment prints its banner ("A.L.E: Arcade Learning Environment
    ... [Powered by Stella]") to stderr from every process that makes a game, SubprocVecEnv's
    workers included, around rlcrate's own output; its errors still come through."""
    with contextlib.suppress(AttributeError):  # an ale-py without a logger setting
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)


def _is_ale(env_id: str) -> bool:
    return env_id.startswith("ALE/")  # the Arcade Learning Environment's games (ale-py)


def _sim_kwargs(env: GymnasiumEnv) -> dict[str, Any]:
    if "action_repeat" in env.kwargs:
        raise FieldError(
            ("env", "kwargs", "action_repeat"),
            f"{SURROGATE} takes env.action_repeat (as the godot backend does), not a kwarg",
        )
    return {**env.kwargs, "action_repeat": env.action_repeat}


def _id_problems(env: GymnasiumEnv) -> list[FieldProblem]:
    registry = _registry(env.id)
    if env.id not in registry:
        registry = _registry()  # every plugin, so the error lists the same ids every time
        return [unknown_id("gymnasium", env.id, registry)]
    if env.id == SURROGATE:
        from runner.backends.gymnasium import ballchase

        try:
            ballchase.config(_sim_kwargs(env))
        except FieldError as exc:
            return [FieldProblem(exc.path, exc.message)]
    elif env.action_repeat != 1:
        return [FieldProblem(("env", "action_repeat"), f"applies to {SURROGATE} only")]
    return []


def _atari_problems(env: GymnasiumEnv) -> list[FieldProblem]:
    found = atari.problems(env, games="ALE/ ids", is_game=_is_ale(env.id), owned=atari.GYM_OWNED)
    if not found and env.atari is not None and importlib.util.find_spec("cv2") is None:
        msg = (
            "needs OpenCV for Stable-Baselines3's frame resizing, which is not installed "
            "(pip install 'rlcrate[gymnasium]')"
        )
        found.append(FieldProblem(("env", "atari"), msg))
    return found


def _maker(
    env_id: str, kwargs: dict[str, Any], seed: int, atari_spec: Any = None, replay: bool = True
):
    def make():
        import gymnasium as gym

        _register_plugins(env_id)
        e = gym.make(env_id, **kwargs)
        e.action_space.seed(seed)
        if not replay or atari_spec or _is_ale(env_id):  # an emulator's state is its own
            return atari.wrap_env(e, atari_spec) if atari_spec else e
        from runner.backends.replay import Replayable

        return Replayable(e)  # outermost: a VecEnv's env_method reaches its methods

    return make


def _render_modes(env_id: str) -> list[str] | None:
    """The render modes the env's class declares (its `metadata`), None when its entry point is
    no class that says."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    entry = gym.spec(env_id).entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    modes = getattr(creator, "metadata", {}).get("render_modes")
    return list(modes) if modes is not None else None


def gym_entry(env_id: str) -> str:
    """The entry point of a registered id, as text ("" for a callable)."""
    import gymnasium as gym

    entry = gym.spec(env_id).entry_point
    return entry if isinstance(entry, str) else ""


def _video_problems(env: GymnasiumEnv) -> list[FieldProblem]:
    if _available() is not None or _id_problems(env):
        return []  # checked with the env, where its units run
    if env.id == SURROGATE:
        msg = f"{SURROGATE} steps every env in one NumPy call and renders no frames"
        return [FieldProblem(("eval", "video"), msg)]
    modes = _render_modes(env.id)
    if modes is not None and "rgb_array" not in modes:
        msg = f"{env.id} renders no rgb_array frames (its render modes: {', '.join(modes)})"
        return [FieldProblem(("eval", "video"), msg)]
    entry = gym_entry(env.id)
    if entry.startswith("gymnasium.envs.mujoco") and not os.environ.get("MUJOCO_GL"):
        msg = (
            f"{env.id} renders through MuJoCo's OpenGL context, which a machine without a display "
            "lacks: set MUJOCO_GL=osmesa (apt-get install libosmesa6) or MUJOCO_GL=egl (a GPU)"
        )
        return [FieldProblem(("eval", "video"), msg)]
    if "render_mode" in env.kwargs:
        msg = "eval.video renders the env as rgb_array itself; remove env.kwargs.render_mode"
        return [FieldProblem(("env", "kwargs", "render_mode"), msg)]
    return []


class Gymnasium(Backend[GymnasiumEnv], Video[GymnasiumEnv], ZooIds, ExactResume[GymnasiumEnv]):
    """Any registered Gymnasium id, DummyVecEnv or SubprocVecEnv (see the module)."""

    name = "gymnasium"
    example_id = "CartPole-v1"
    Options = GymnasiumEnv
    TRAITS = Traits(module="gymnasium", extra="gymnasium")  # ExactResume: record and replay

    interfaces = (SB3_VEC_ENV, GYMNASIUM_ENV)

    def available(self) -> str | None:
        return _available()

    def env_ids(self) -> list[str]:
        return sorted(_registry())

    def make_env(
        self,
        env: GymnasiumEnv,
        parallel: ParallelSpec,
        *,
        interface: str,
        seed: int,
        log_dir: Path | None = None,
    ) -> Any:
        """GYMNASIUM_ENV: one env, made as `make_vec_env` makes each of its envs."""
        if interface != GYMNASIUM_ENV:
            return super().make_env(env, parallel, interface=interface, seed=seed, log_dir=log_dir)
        self.require_env(env)
        return _maker(env.id, atari.gym_kwargs(env), seed, env.atari, replay=False)()

    def check_env(self, env: GymnasiumEnv) -> list[FieldProblem]:
        return _id_problems(env) or _atari_problems(env)

    def resume_approximate(self, env: GymnasiumEnv) -> str | None:
        if self.is_atari(env.id) or env.atari is not None:
            return "the Atari emulator's state is not saved with a checkpoint"
        # each env's episode is recorded and replayed (runner.backends.replay); the BallChase
        # surrogate's state is its arrays (ballchase_vec)
        return None

    def gymnasium_id(self, env_id: str) -> str | None:
        return env_id

    def check_video(self, env: GymnasiumEnv) -> list[FieldProblem]:
        return _video_problems(env)

    def video_env(self, env: GymnasiumEnv, *, size: tuple[int, int] | None = None) -> GymnasiumEnv:
        """The same env rendering rgb_array frames (DummyVecEnv's `get_images` renders them)."""
        self.require_env(env)
        first_error(self.check_video(env))
        return env.model_copy(update={"kwargs": {**env.kwargs, "render_mode": "rgb_array"}})

    def is_atari(self, env_id: str) -> bool:
        return _is_ale(env_id)

    def processes(self, parallel: ParallelSpec) -> int:
        return parallel.envs if parallel.mode == "subproc" else 0

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        if parallel.mode == "subproc" and parallel.workers != parallel.envs:
            msg = (
                "gymnasium's SubprocVecEnv runs one process per env; set parallel.workers to "
                f"parallel.envs ({parallel.envs})"
            )
            return [FieldProblem(("parallel", "workers"), msg)]
        if parallel.mode != "subproc" and parallel.workers != 1:
            msg = "gymnasium's DummyVecEnv steps every env in one process; set parallel.workers: 1"
            return [FieldProblem(("parallel", "workers"), msg)]
        return []

    def action_kind(self, env: GymnasiumEnv) -> str | None:
        if self.is_atari(env.id):
            self.require_env(env)
            return "Discrete"  # every Atari game; making one costs seconds (and prints a banner)
        return type(self.spaces(env)[1]).__name__

    def spaces(self, env: GymnasiumEnv) -> tuple[Any, Any]:
        import gymnasium as gym

        self.require_env(env)
        try:
            e = gym.make(env.id, **env.kwargs)
        except TypeError as exc:
            raise FieldError(("env", "kwargs"), f"{env.id} rejected them ({exc})") from None
        except Exception as exc:  # the env's own constructor: a KeyError, a ValueError, anything
            where = ("env", "kwargs") if env.kwargs else ("env", "id")
            why = f"{env.id} could not be made ({first_line(exc, 200)})"
            raise FieldError(where, why) from None
        try:
            return e.observation_space, e.action_space
        finally:
            e.close()

    def episode_limit(self, env: GymnasiumEnv) -> int | None:
        """gym.make's time limit: `max_episode_steps` in env.kwargs, else the registration's
        (None: the env has none, as CliffWalking-v1)."""
        import gymnasium as gym

        if env.id == SURROGATE:
            return None
        given = atari.gym_kwargs(env).get("max_episode_steps")
        if isinstance(given, int) and not isinstance(given, bool) and given > 0:
            return given
        _register_plugins(env.id)
        return gym.spec(env.id).max_episode_steps

    def make_vec_env(
        self, env: GymnasiumEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        """`parallel.envs` envs; SubprocVecEnv runs one process each (`parallel.workers` is
        checked by `check_parallel`, not used); gymnasium writes no logs of its own."""
        from stable_baselines3.common.vec_env import DummyVecEnv

        from runner.backends._subproc import BoundedSubprocVecEnv

        self.require_env(env)
        if env.id == SURROGATE:
            from runner.backends.gymnasium import ballchase, ballchase_vec

            cfg = ballchase.config(_sim_kwargs(env))
            return ballchase_vec.BallChaseVecEnv(cfg, n_envs=parallel.envs, seed=seed)
        kwargs = atari.gym_kwargs(env)
        fns = [_maker(env.id, kwargs, seed + i, env.atari) for i in range(parallel.envs)]
        # subproc even for one env (a benchmark of subproc must measure subproc); forkserver, so
        # workers do not inherit the parent's torch threads or signal handlers; bounded, so a
        # dead or hung worker fails the unit instead of hanging it
        venv: Any = (
            BoundedSubprocVecEnv(fns, start_method="forkserver")
            if parallel.mode == "subproc"
            else DummyVecEnv(fns)
        )
        venv.seed(seed)  # env i gets seed + i on its next reset
        made: VecEnv = atari.stack(venv, env.atari) if env.atari else venv
        return made
