"""Brax environments (JAX): ids from Brax's registry, its physics pipelines through env.kwargs.

`env.kwargs.backend` picks the pipeline (Brax's own name for it: generalized, positional, spring,
or mjx); `env.kwargs.episode_length` caps episodes (default 1000, as Brax's PPO examples use);
every other key goes to the env's constructor. `brax_ppo` trains with Brax's own PPO loop
(runner/trainers/brax_ppo/); any Stable-Baselines3 algorithm trains through `make_vec_env`, an
SB3 VecEnv over the jitted, vmapped env: the slow path (every step crosses from JAX to NumPy and
torch and back), as Brax's own documentation says of its gym wrappers.

Brax 0.14.2's PPO runs with JAX 0.9, which both image locks (and so the runner's own environment)
carry. A runner installed without the jax extra runs Brax's units in the GPU environment
(`make gpu-env`) through the per-unit interpreter, and reads Brax's registry, PPO signature and
package versions from that environment's files.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.backends.abilities import ExactResume, Video
from runner.backends.base import (
    FUNCTIONAL_JAX_ENV,
    GPU_ENV_HINT,
    SB3_VEC_ENV,
    STATISTICAL,
    Backend,
    JaxEnv,
    RepeatsActions,
    Traits,
    gpu_env_python,
    unknown_id,
)
from runner.backends.brax.frames import pose, video_problems
from runner.backends.interfaces import FramePainter, jax_observation_size
from runner.errors import BackendUnavailable, FieldProblem, first_error
from runner.manifest.schema import ParallelSpec

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

PIPELINES = ("generalized", "positional", "spring", "mjx")
RUNNER_KWARGS = ("backend", "episode_length")  # read by rlcrate, not the env constructor
EPISODE_LENGTH = 1000
INSTALL = (
    f"install rlcrate's jax extra (pip install 'rlcrate[jax]'), or {GPU_ENV_HINT}, or set "
    "RLCRATE_PYTHON_BRAX to a Python that has brax==0.14.2 and rlcrate"
)


class BraxEnv(RepeatsActions):
    """The brax backend's env options (the pipeline and episode length are env.kwargs, as
    Brax names them)."""


def _own() -> bool:
    return (
        importlib.util.find_spec("brax") is not None and importlib.util.find_spec("jax") is not None
    )


def _interpreter() -> str | None:
    """The runner's own Python when it has Brax, else the GPU environment's when it exists."""
    python = gpu_env_python()
    return None if _own() or not python.is_file() else str(python)


def _units_python() -> str | None:
    """The Python Brax's units run with when it is not the runner's own."""
    return os.environ.get("RLCRATE_PYTHON_BRAX") or _interpreter()


def _package_dir() -> Path | None:
    """Brax's package folder: the runner's own, else in the Python its units run with."""
    if _own():
        spec = importlib.util.find_spec("brax")
        if spec is None or not spec.submodule_search_locations:
            return None  # not a package folder after all
        return Path(list(spec.submodule_search_locations)[0])
    python = _units_python()
    if python is None:
        return None
    lib = Path(python).absolute().parent.parent / "lib"
    return next(iter(sorted(lib.glob("python3*/site-packages/brax"))), None)


def source(relative: str) -> Path | None:
    """A file of the Brax package (e.g. training/agents/ppo/train.py), without importing it."""
    root = _package_dir()
    return root / relative if root is not None and (root / relative).is_file() else None


def _available() -> str | None:
    if _package_dir() is None:
        return f"Brax is not installed for rlcrate ({INSTALL})"
    return None


def _require() -> None:
    reason = _available()
    if reason:
        raise BackendUnavailable(reason)


@cache
def _env_ids() -> list[str]:
    """The keys of Brax's `_envs` registry, read from its source (importing brax starts JAX)."""
    _require()
    path = source("envs/__init__.py")
    if path is None:
        raise BackendUnavailable(
            f"Brax's env registry (brax/envs/__init__.py) is missing ({INSTALL})"
        )
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "_envs":
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Dict):
                raise BackendUnavailable(f"{path}: Brax's env registry (_envs) is not a mapping")
            return sorted(str(k.value) for k in node.value.keys if isinstance(k, ast.Constant))
    raise BackendUnavailable(f"{path}: Brax's env registry (_envs) was not found")


def _problems(env: BraxEnv) -> list[FieldProblem]:
    if env.id not in _env_ids():
        return [unknown_id("brax", env.id, _env_ids())]
    out = []
    pipeline = env.kwargs.get("backend", "generalized")
    if pipeline not in PIPELINES:
        out.append(
            FieldProblem(
                ("env", "kwargs", "backend"),
                f"'{pipeline}' is not a Brax pipeline (expected one of {', '.join(PIPELINES)})",
            )
        )
    length = env.kwargs.get("episode_length", EPISODE_LENGTH)
    if not isinstance(length, int) or length < 1:
        out.append(FieldProblem(("env", "kwargs", "episode_length"), "expected a positive integer"))
    return out


def make_brax_env(env: BraxEnv) -> Any:
    """The unwrapped Brax env (imports JAX)."""
    _require()
    from brax import envs

    kwargs = {k: v for k, v in env.kwargs.items() if k not in RUNNER_KWARGS}
    return envs.get_environment(env.id, backend=env.kwargs.get("backend", "generalized"), **kwargs)


def painter_of(system: Any, size: tuple[int, int] | None) -> FramePainter:
    """MuJoCo's renderer posed from a Brax system's states (`frames.Painter`), at `size` (None:
    Brax's own frame)."""
    from runner.backends.brax.frames import DEFAULT_SIZE, Painter

    return Painter(system, size or DEFAULT_SIZE)


def episode_length(env: BraxEnv) -> int:
    return int(env.kwargs.get("episode_length", EPISODE_LENGTH))


def jax_env(env: BraxEnv, made: Any) -> JaxEnv:
    """FUNCTIONAL_JAX_ENV of the Brax env `made`: Brax's own training wrapper, and its drawing
    where it has a physics system."""
    drawable = hasattr(made, "sys")
    painter = functools.partial(painter_of, made.sys) if drawable else None
    return JaxEnv(made, episode_length(env), env.action_repeat, painter, pose if drawable else None)


JAX_PROBE = "import jax; print(jax.__version__, *[str(d) for d in jax.devices()])"
PACKAGES = ("brax", "jax", "jaxlib", "flax", "optax", "mujoco", "mujoco-mjx", "numpy")


class Brax(Backend[BraxEnv], Video[BraxEnv], ExactResume[BraxEnv]):
    """Brax's registry and physics pipelines (see the module)."""

    name = "brax"
    example_id = "fast"  # Brax's own test env: no physics to trace
    Options = BraxEnv
    # Both image locks carry Brax and JAX 0.9; a runner without them runs Brax's units in the GPU
    # environment, which brings its own SB3 and torch.
    TRAITS = Traits(
        module="brax",
        extra="jax",
        needs_gpu=True,
        determinism=STATISTICAL,
        needs_train_extra=False,
        install=INSTALL,
        # ExactResume: through the SB3 adapter, the Brax state's arrays and the key stream are
        # the env part of a checkpoint (BraxVecEnv's replay methods); brax_ppo's own loop keeps
        # its env state inside Brax's jitted training (it does not resume exactly)
    )

    interfaces = (SB3_VEC_ENV, FUNCTIONAL_JAX_ENV)

    def available(self) -> str | None:
        return _available()

    def interpreter(self) -> str | None:
        return _interpreter()

    def env_ids(self) -> list[str]:
        return _env_ids()

    def check_env(self, env: BraxEnv) -> list[FieldProblem]:
        return _problems(env)

    def package_file(self, relative: str) -> Path | None:
        return source(relative)

    def make_env(
        self,
        env: BraxEnv,
        parallel: ParallelSpec,
        *,
        interface: str,
        seed: int,
        log_dir: Path | None = None,
    ) -> Any:
        if interface != FUNCTIONAL_JAX_ENV:
            return super().make_env(env, parallel, interface=interface, seed=seed, log_dir=log_dir)
        self.require_env(env)
        made = make_brax_env(env)
        return jax_env(env, made)

    def spaces(self, env: BraxEnv) -> tuple[Any, Any] | None:
        import gymnasium as gym
        import numpy as np

        self.require_env(env)
        if not _own():
            return None  # Brax is in its own venv: only its units build envs
        e = make_brax_env(env)
        obs = gym.spaces.Box(-np.inf, np.inf, (jax_observation_size(e),), np.float32)
        return obs, gym.spaces.Box(-1.0, 1.0, (e.action_size,), np.float32)

    def action_kind(self, env: BraxEnv) -> str | None:
        return "Box"  # every Brax env takes continuous actions in [-1, 1]

    def check_video(self, env: BraxEnv) -> list[FieldProblem]:
        """Brax's own drawing (MuJoCo's renderer) needs an OpenGL context (`frames`)."""
        return video_problems(env.id)

    def video_env(self, env: BraxEnv, *, size: tuple[int, int] | None = None) -> BraxEnv:
        """The same env: its VecEnv draws the first env's state on `get_images` (at Brax's
        own frame size; the writer scales it to `size`)."""
        first_error(self.check_video(env))
        return env

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        if parallel.workers != 1:
            msg = "brax steps every env in one process (jax.vmap); set parallel.workers: 1"
            return [FieldProblem(("parallel", "workers"), msg)]
        return []

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        """JAX's devices, as the Python Brax's units run in sees them."""
        import subprocess
        import sys

        reason = _available()
        if reason:
            return [("JAX devices", False, reason)]
        python = _interpreter() or sys.executable
        try:
            out = subprocess.run(
                [python, "-c", JAX_PROBE], capture_output=True, text=True, timeout=120, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return [("JAX devices", False, f"{python}: {exc}")]
        if out.returncode != 0:
            return [("JAX devices", False, (out.stderr.strip().splitlines() or ["failed"])[-1])]
        version, *devices = out.stdout.split()
        return [("JAX devices", True, f"jax {version}: {', '.join(devices)} ({python})")]

    def make_vec_env(
        self, env: BraxEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        self.require_env(env)
        from runner.backends.brax.vec import BraxVecEnv

        return BraxVecEnv(jax_env(env, make_brax_env(env)), n_envs=parallel.envs, seed=seed)

    def versions(self) -> dict[str, dict[str, Any]]:
        """The Python Brax's units run with and its packages, read from their metadata (no
        import)."""
        import importlib.metadata
        import re

        root = _package_dir()
        if root is None:
            return {"brax": {"error": _available()}}
        found = {
            re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version
            for d in importlib.metadata.distributions(path=[str(root.parent)])
        }
        python = None if _own() else _units_python()
        return {
            "brax": {
                "path": python or "the runner's Python",
                "version": f"Brax {found.get('brax', '?')} (jax {found.get('jax', '?')})",
                "packages": {k: found[k] for k in PACKAGES if k in found},
            }
        }
