"""Isaac Lab tasks by id, trained through Isaac Lab's own Stable-Baselines3 wrapper.

Isaac Lab 3.0.0 requires Python 3.12 and pins torch 2.11.0, so its units run in their own
environment (the per-unit interpreter, `interpreter()`): the GPU environment, which `make gpu-env`
builds from images/cuda/requirements.lock (the CUDA image's own lock), or any other Python that
RLCRATE_PYTHON_ISAACLAB names. The runner asks that Python for Isaac Lab's task
registry once and caches the answer. `parallel.envs` is the task's num_envs; env.kwargs `device`,
`physics`, `cuda_graph` and `asset_root` choose how it runs (`env.picks`), and every
other key is a dotted attribute of the task's configuration (e.g. `episode_length_s: 3.0`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.backends.abilities import TaskConfigs
from runner.backends.base import (
    BATCHED_TORCH_ENV,
    GPU_ENV_HINT,
    SB3_VEC_ENV,
    STATISTICAL,
    Backend,
    BatchedTorchEnv,
    Traits,
    gpu_env_python,
    python_problem,
    unknown_id,
)
from runner.errors import BackendUnavailable, FieldProblem
from runner.manifest.schema import EnvSpec, ParallelSpec
from runner.record.rundir import write_text_atomic

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

ROOT = Path(__file__).resolve().parents[3]  # runner/backends/X/__init__.py -> the checkout
INSTALL = (
    f"{GPU_ENV_HINT}, or set RLCRATE_PYTHON_ISAACLAB to a Python 3.12 that has isaaclab==3.0.0 "
    "and rlcrate"
)
REGISTRY_FORMAT = 2  # bumped when a cached answer changes shape (2: RSL-RL's version)


class IsaacLabEnv(EnvSpec):
    """The isaaclab backend's env options: the task's own (device, physics, cuda_graph,
    asset_root and the task configuration's attributes) are env.kwargs."""


GPU_ONLY = "needs an NVIDIA GPU, and this machine has none (nvidia-smi lists no GPU)"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rlcrate"


def _in_isaaclab_python() -> bool:
    return sys.version_info[:2] == (3, 12) and importlib.util.find_spec("isaaclab") is not None


def _interpreter() -> str | None:
    if _in_isaaclab_python():
        return sys.executable
    python = gpu_env_python()
    return str(python) if python.is_file() else None


def _python() -> str | None:
    return os.environ.get("RLCRATE_PYTHON_ISAACLAB") or _interpreter()


def _available() -> str | None:
    python = _python()
    if python is None:
        where = gpu_env_python()
        return f"the GPU environment (Python 3.12 with Isaac Lab) is not at {where}: {INSTALL}"
    if not os.access(python, os.X_OK):
        return f"{python} is not an executable Python ({INSTALL})"
    problem = python_problem(python)  # before its registry is asked for, for minutes
    if problem:
        source = "RLCRATE_PYTHON_ISAACLAB" if os.environ.get("RLCRATE_PYTHON_ISAACLAB") else ""
        return f"{source + ': ' if source else ''}{python} {problem} ({INSTALL})"
    return None


@cache
def registry() -> dict[str, Any]:
    """{isaaclab, python, tasks, asset_root} from Isaac Lab's Python, cached on disk per
    interpreter and install (its site-packages' modification time)."""
    from runner.backends.isaaclab.tasks import MARKER

    return _cached("registry", lambda python: _ask(python, "isaaclab.tasks", [], MARKER))


@cache
def agent_config(task: str, entry_point: str) -> dict[str, Any]:
    """The task's registered agent config for one library, `{entry, cfg}` (entry None: the task
    registers none), from Isaac Lab's Python, cached on disk like the registry."""
    from runner.backends.isaaclab.agent import MARKER

    def ask(python: str) -> dict[str, Any]:
        return _ask(python, "isaaclab.agent", [task, entry_point], MARKER)

    return _cached(f"agent:{task}:{entry_point}", ask)


def _cached(what: str, ask: Any) -> dict[str, Any]:
    reason = _available()
    if reason:
        raise BackendUnavailable(reason)
    python = str(_python())
    stamp = f"{REGISTRY_FORMAT}:{what}:{os.path.realpath(python)}:{_install_stamp(python)}"
    path = cache_dir() / f"isaaclab-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.json"
    with contextlib.suppress(OSError, ValueError):
        return dict(json.loads(path.read_text(encoding="utf-8")))
    data = ask(python)
    with contextlib.suppress(OSError):  # a read-only home only costs speed
        write_text_atomic(path, json.dumps(data), durable=False)
    return dict(data)


def _install_stamp(python: str) -> float:
    lib = Path(python).resolve().parent.parent / "lib"
    sites = list(lib.glob("python3*/site-packages"))
    return max((p.stat().st_mtime for p in sites), default=Path(python).stat().st_mtime)


def _ask(python: str, module: str, args: list[str], marker: str) -> dict[str, Any]:
    """Run `python -m runner.backends.<module> ARGS` in Isaac Lab's Python; its marked JSON line."""
    cmd = [python, "-m", f"runner.backends.{module}", *args]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable(f"{python} could not read Isaac Lab's tasks ({exc})") from None
    for line in out.stdout.splitlines()[::-1]:
        if line.startswith(marker):
            return dict(json.loads(line[len(marker) :]))
    last = (out.stderr.strip().splitlines() or ["no output"])[-1]
    raise BackendUnavailable(f"{python} could not read Isaac Lab's tasks: {last} ({INSTALL})")


def _env_ids() -> list[str]:
    return list(registry()["tasks"])


def gpu_present() -> bool:
    from runner.record.machine import gpu_info

    return bool(gpu_info()["gpus"])


def _problems(env: IsaacLabEnv) -> list[FieldProblem]:
    tasks = _env_ids()
    if env.id not in tasks:
        return [unknown_id("isaaclab", env.id, tasks)]
    device = str(env.kwargs.get("device", ""))
    if device and device != "cpu" and not device.startswith("cuda"):
        return [
            FieldProblem(
                ("env", "kwargs", "device"), f"expected cpu, cuda or cuda:N, got {device!r}"
            )
        ]
    gpu = gpu_present()
    out = []
    if device.startswith("cuda") and not gpu:
        msg = f"'{device}' {GPU_ONLY}; use device: cpu"
        out.append(FieldProblem(("env", "kwargs", "device"), msg))
    if env.kwargs.get("cuda_graph") and (device == "cpu" or not gpu):
        msg = f"CUDA graphs {GPU_ONLY}; remove it"
        out.append(FieldProblem(("env", "kwargs", "cuda_graph"), msg))
    return out


ISAACSIM_WHY = (
    "Isaac Sim's wheels come only from NVIDIA's own index (on the public index two of its "
    "extension-cache packages are placeholders); Isaac Lab runs without it, on Newton"
)


class IsaacLab(Backend[IsaacLabEnv], TaskConfigs):
    """Isaac Lab tasks by id, in Isaac Lab's own Python (see the module)."""

    name = "isaaclab"
    example_id = "Isaac-Cartpole-Direct"  # runs on a CPU, a local stand-in for its asset
    Options = IsaacLabEnv
    # In the CUDA image only (its lock is the GPU environment's).
    TRAITS = Traits(
        module="isaaclab",
        extra="isaaclab",
        images=("cuda",),
        needs_gpu=True,
        determinism=STATISTICAL,
        install=INSTALL,
        resume="Isaac Sim's simulation state is not saved with a checkpoint",
        video_needs="Isaac Sim's RTX renderer (an NVIDIA RTX GPU with its driver; Isaac Lab "
        "renders nothing on a CPU)",
    )

    def available(self) -> str | None:
        return _available()

    def interpreter(self) -> str | None:
        return _interpreter()

    def env_ids(self) -> list[str]:
        return _env_ids()

    def check_env(self, env: IsaacLabEnv) -> list[FieldProblem]:
        return _problems(env)

    def agent_config(self, task: str, entry_point: str) -> dict[str, Any] | None:
        return agent_config(task, entry_point)

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        if parallel.workers != 1:
            msg = "Isaac Lab steps every env in one simulation; set parallel.workers: 1"
            return [FieldProblem(("parallel", "workers"), msg)]
        return []

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        """Isaac Lab and Isaac Sim, as the Python its units run in sees them."""
        from runner.errors import RunnerError

        reason = _available()
        if reason:
            return [
                ("Isaac Lab (Python 3.12)", False, reason),
                ("Isaac Sim", False, "needs Isaac Lab's env"),
            ]
        try:
            reg = registry()
        except RunnerError as exc:
            return [("Isaac Lab (Python 3.12)", False, str(exc)), ("Isaac Sim", False, "unknown")]
        lab = f"Isaac Lab {reg['isaaclab']}, Python {reg['python']}, {len(reg['tasks'])} tasks"
        sim = (
            ("Isaac Sim", True, "installed")
            if reg.get("isaacsim")
            else ("Isaac Sim", False, ISAACSIM_WHY)
        )
        return [("Isaac Lab (Python 3.12)", True, f"{lab} ({_interpreter()})"), sim]

    interfaces = (SB3_VEC_ENV, BATCHED_TORCH_ENV)

    def make_env(
        self,
        env: IsaacLabEnv,
        parallel: ParallelSpec,
        *,
        interface: str,
        seed: int,
        log_dir: Path | None = None,
    ) -> Any:
        """BATCHED_TORCH_ENV: the task launched (Isaac Lab's own env, unwrapped) and what closes
        its app, as a `BatchedTorchEnv` (`(env, end)`)."""
        if interface != BATCHED_TORCH_ENV:
            return super().make_env(env, parallel, interface=interface, seed=seed, log_dir=log_dir)
        if not _in_isaaclab_python():
            raise BackendUnavailable(f"isaaclab units run in Isaac Lab's Python 3.12 ({INSTALL})")
        from runner.backends.isaaclab.env import launch

        return BatchedTorchEnv(*launch(env, parallel.envs, seed, log_dir))

    def make_vec_env(
        self, env: IsaacLabEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        if not _in_isaaclab_python():
            raise BackendUnavailable(f"isaaclab units run in Isaac Lab's Python 3.12 ({INSTALL})")
        from runner.backends.isaaclab.env import make

        venv: VecEnv = make(env, parallel.envs, seed, log_dir)
        return venv

    def versions(self) -> dict[str, dict[str, Any]]:
        """Isaac Lab's Python and packages, and what a manifest without kwargs runs with here."""
        try:
            reg = registry()
        except BackendUnavailable as exc:
            return {"isaaclab": {"error": str(exc)}}
        gpu = gpu_present()
        return {
            "isaaclab": {
                "path": _python(),
                "version": f"Isaac Lab {reg['isaaclab']} (Python {reg['python']})",
                "packages": reg.get("packages", {}),
                "isaacsim": "installed"
                if reg.get("isaacsim")
                else "not installed (runs without Kit)",
                "default_device": "cuda:0" if gpu else "cpu (no NVIDIA GPU)",
                "default_physics": "the task's default"
                if gpu
                else "newton_mjwarp, CUDA graphs off",
                "asset_root": reg["asset_root"],
            }
        }
