"""MuJoCo Playground (MJX): its registered environments by id (the DeepMind Control Suite,
locomotion, manipulation), as Playground's own recipe trains them.

`env.id` names a registered environment (`rlcrate envs playground`); `env.kwargs` override its
own configuration (`registry.load(id, config_overrides=...)`: `overrides`), checked against its
defaults at their lines; `env.impl` picks MJX's implementation (rlcrate's default `jax`, MJX
itself, which runs on a CPU; Playground's own default `warp`, MuJoCo Warp, needs an NVIDIA
GPU). The episode length and action repeat are the configuration's own `episode_length` and
`action_repeat`, as Playground's training scripts pass them to Brax's wrappers.

An env is a functional JAX env (FUNCTIONAL_JAX_ENV, Brax's `Env` API), wrapped for training by
Playground's own `wrap_for_brax_training`: `brax_ppo` trains it as Playground's recipe does
(Brax's PPO; `algo.defaults: task` takes the hyperparameters Playground publishes for the env),
and any Stable-Baselines3 algorithm through the VecEnv adapter (`vec`, the shared
`backends.jax_vec`). `parallel.envs` is the batch, stepped in one process. `eval.video` draws
the env's MuJoCo model with MuJoCo's renderer (`backends.mujoco_frames`).

Locomotion and manipulation envs load MuJoCo Menagerie's robots, which Playground downloads on
first load; where they are not installed, such an id is refused before any unit starts, and
`rlcrate envs playground` marks it (`catalog`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from runner.backends.abilities import ExactResume, TaskConfigs, Video
from runner.backends.base import (
    FUNCTIONAL_JAX_ENV,
    SB3_VEC_ENV,
    STATISTICAL,
    Backend,
    JaxEnv,
    Traits,
    unknown_id,
)
from runner.backends.playground import catalog
from runner.backends.playground.overrides import config_overrides, flatten, problems
from runner.errors import FieldProblem
from runner.manifest.schema import EnvSpec, ParallelSpec

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

# The agent configs Playground publishes, by the name a trainer asks for (`TaskConfigs`)
ENTRY_POINTS = ("brax_ppo_cfg_entry_point",)
PACKAGES = (
    "playground", "brax", "jax", "jaxlib", "flax", "mujoco", "mujoco-mjx", "warp-lang",
    "ml-collections", "numpy",
)  # fmt: skip
GPU_ONLY = "needs an NVIDIA GPU, and this machine has none (nvidia-smi lists no GPU)"


class PlaygroundEnv(EnvSpec):
    """The playground backend's env options: `kwargs` override the env's own configuration."""

    impl: Literal["jax", "warp"] = Field(
        "jax",
        description="MJX's implementation: jax (MJX itself, in JAX: runs on a CPU and on GPUs) "
        "or warp (MuJoCo Warp: an NVIDIA GPU; Playground's own default). env.kwargs override "
        "the rest of the env's configuration (`rlcrate envs playground`).",
    )


def _problems(env: PlaygroundEnv) -> list[FieldProblem]:
    ids = catalog.families()
    if env.id not in ids:
        return [unknown_id("playground", env.id, ids)]
    missing = catalog.missing_asset(env.id)
    if missing:  # before anything asks Playground, which would try the download
        return [FieldProblem(("env", "id"), f"'{env.id}' needs {missing}; {_offline_hint()}")]
    out = []
    if env.impl == "warp":
        from runner.record.machine import gpu_info

        if not gpu_info()["gpus"]:
            out.append(FieldProblem(("env", "impl"), f"warp (MuJoCo Warp) {GPU_ONLY}; use jax"))
    if env.kwargs:  # the defaults are asked for only when there is something to check
        config = catalog.registry()["envs"][env.id]["config"]
        out += problems(env.id, env.kwargs, config)
    return out


def _offline_hint() -> str:
    return (
        f"it needs a download: clone it there at commit {catalog.menagerie_commit()} where the "
        "network allows, or pick a DeepMind Control Suite env (CartpoleBalance, ...), which "
        "Playground bundles"
    )


def _config(env: PlaygroundEnv) -> dict[str, list[Any]]:
    return dict(catalog.registry()["envs"][env.id]["config"])


def _setting(env: PlaygroundEnv, key: str, default: int) -> int:
    """An integer setting of the env's configuration as the manifest leaves it."""
    given = {k: v for k, _, v in flatten(env.kwargs)}
    value = given.get(key, _config(env).get(key, [default])[0])
    return int(value)


def make_playground_env(env: PlaygroundEnv) -> Any:
    """The unwrapped MJX env, made by Playground's registry (imports JAX and Playground)."""
    from mujoco_playground import registry

    overrides = config_overrides(env.kwargs, env.impl, _config(env))
    try:
        return registry.load(env.id, config_overrides=overrides)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise FieldProblem(("env", "kwargs"), f"Playground refused them: {exc}").error() from None


def pose(state: Any) -> tuple[Any, Any]:
    """A Playground state's joint positions and velocities (its MJX data), which the painter
    draws."""
    return state.data.qpos, state.data.qvel


def painter_of(model: Any, size: tuple[int, int] | None) -> Any:
    from runner.backends.mujoco_frames import DEFAULT_SIZE, ModelPainter

    return ModelPainter(model, size or DEFAULT_SIZE)


def jax_env(env: PlaygroundEnv) -> JaxEnv:
    """FUNCTIONAL_JAX_ENV: the env, its configuration's episode length and action repeat,
    Playground's own training wrapper, and MuJoCo's renderer on its model."""
    from mujoco_playground import wrapper

    made = make_playground_env(env)
    return JaxEnv(
        made,
        episode_length=_setting(env, "episode_length", 1000),
        action_repeat=_setting(env, "action_repeat", 1),
        painter=functools.partial(painter_of, made.mj_model),
        pose=pose,
        wrap=wrapper.wrap_for_brax_training,
    )


class Playground(
    Backend[PlaygroundEnv], Video[PlaygroundEnv], ExactResume[PlaygroundEnv], TaskConfigs
):
    """MuJoCo Playground's MJX environments (see the module)."""

    name = "playground"
    example_id = "CartpoleBalance"
    Options = PlaygroundEnv
    # Both image locks carry Playground; a runner without it runs its units in the GPU
    # environment, which brings its own SB3 and torch.
    TRAITS = Traits(
        module="mujoco_playground",
        extra="playground",
        needs_gpu=True,  # MJX is built for an accelerator (it runs on a CPU at small sizes)
        determinism=STATISTICAL,
        needs_train_extra=False,
        install=catalog.INSTALL,
        video_needs="MuJoCo's renderer with an OpenGL context (MUJOCO_GL=osmesa or egl)",
        # ExactResume: through the SB3 adapter, each env's slice of the Playground state (its
        # MJX data, observation, info) and the key stream are the env part of a checkpoint
        # (`backends.jax_vec`); brax_ppo's own loop keeps its env state inside Brax's jitted
        # training (it does not resume exactly)
    )
    interfaces = (SB3_VEC_ENV, FUNCTIONAL_JAX_ENV)

    def available(self) -> str | None:
        return catalog.available()

    def interpreter(self) -> str | None:
        return catalog.interpreter()

    def env_ids(self) -> list[str]:
        return sorted(catalog.families())

    def id_notes(self) -> dict[str, str]:
        """The ids whose assets are not in the installed package: they need a download."""
        return {
            i: "needs a download: MuJoCo Menagerie"
            for i in catalog.families()
            if catalog.missing_asset(i)
        }

    def check_env(self, env: PlaygroundEnv) -> list[FieldProblem]:
        return _problems(env)

    def package_file(self, relative: str) -> Path | None:
        """A file of Brax, whose PPO and wrappers train Playground's envs (brax_ppo reads its
        `ppo.train` signature there), beside Playground in the units' Python."""
        root = catalog.package_dir()
        path = root.parent / "brax" / relative if root is not None else None
        return path if path is not None and path.is_file() else None

    def make_env(
        self,
        env: PlaygroundEnv,
        parallel: ParallelSpec,
        *,
        interface: str,
        seed: int,
        log_dir: Path | None = None,
    ) -> Any:
        if interface != FUNCTIONAL_JAX_ENV:
            return super().make_env(env, parallel, interface=interface, seed=seed, log_dir=log_dir)
        self.require_env(env)
        return jax_env(env)

    def make_vec_env(
        self, env: PlaygroundEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        self.require_env(env)
        from runner.backends.playground.vec import PlaygroundVecEnv

        task = jax_env(env)
        size = task.observation_size()
        if not isinstance(size, int):
            keys = ", ".join(sorted(size))
            msg = (
                f"{env.id}'s observation is a mapping ({keys}); the SB3 adapter takes one "
                "observation array: train it with algo.name: brax_ppo"
            )
            raise FieldProblem(("env", "id"), msg).error()
        return PlaygroundVecEnv(task, n_envs=parallel.envs, seed=seed)

    def action_kind(self, env: PlaygroundEnv) -> str | None:
        return "Box"  # every MJX env takes continuous actions in [-1, 1]

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        if parallel.workers != 1:
            msg = "playground steps every env in one process (jax.vmap); set parallel.workers: 1"
            return [FieldProblem(("parallel", "workers"), msg)]
        return []

    def episode_limit(self, env: PlaygroundEnv) -> int | None:
        return _setting(env, "episode_length", 1000)

    def check_video(self, env: PlaygroundEnv) -> list[FieldProblem]:
        """Playground's envs are MuJoCo models, drawn by MuJoCo's renderer (an OpenGL context)."""
        from runner.backends.mujoco_frames import gl_problem

        problem = gl_problem("Playground")
        return [FieldProblem(("eval", "video"), problem)] if problem else []

    def agent_config(self, task: str, entry_point: str) -> dict[str, Any] | None:
        """Playground's published Brax PPO hyperparameters for `task` (`locomotion_params`,
        `dm_control_suite_params`, `manipulation_params`), for `brax_ppo_cfg_entry_point`."""
        if entry_point not in ENTRY_POINTS or task not in catalog.families():
            return {"entry": None, "cfg": {}}
        found = catalog.registry()["brax_ppo"].get(task) or {"entry": None}
        return {"entry": found.get("entry"), "cfg": found.get("cfg", {})}

    def versions(self) -> dict[str, dict[str, Any]]:
        """The Python Playground's units run with and its packages, read from their metadata (no
        import)."""
        import importlib.metadata
        import re

        root = catalog.package_dir()
        if root is None:
            return {"playground": {"error": catalog.available()}}
        found = {
            re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version
            for d in importlib.metadata.distributions(path=[str(root.parent)])
        }
        return {
            "playground": {
                "path": catalog.units_python() or "the runner's Python",
                "version": f"MuJoCo Playground {found.get('playground', '?')} "
                f"(mujoco-mjx {found.get('mujoco-mjx', '?')}, jax {found.get('jax', '?')})",
                "packages": {k: found[k] for k in PACKAGES if k in found},
                "menagerie": str(catalog.menagerie()) if catalog.menagerie().is_dir() else None,
            }
        }
