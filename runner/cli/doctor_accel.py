"""`rlcrate doctor`'s accelerator rows: JAX's devices, Isaac Lab and Isaac Sim, CUDA and driver.

Each row asks the Python that would run the backend's units (the runner's own for Brax when it
has it, else the GPU environment, Python 3.12 from images/cuda/requirements.lock), since the
runner's own Python may have neither package.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from runner.errors import RunnerError

ISAACSIM_WHY = (
    "Isaac Sim's wheels come only from NVIDIA's own index (on the public index two of its "
    "extension-cache packages are placeholders); Isaac Lab runs without it, on Newton"
)
JAX_PROBE = "import jax; print(jax.__version__, *[str(d) for d in jax.devices()])"

Row = tuple[str, str, str]
OK, NO = "[green]ok[/]", "[red]no[/]"


def _gpu_env() -> Row:
    """The one GPU environment (`make gpu-env`): where it is, and whether it holds the lock that
    this checkout has (the stamp records the lock's sha256 it was built from)."""
    from runner.backends.base import GPU_ENV_HINT, gpu_env_python

    python = gpu_env_python()
    if not python.is_file():
        return "GPU environment", NO, f"not built ({GPU_ENV_HINT})"
    env = python.parent.parent
    stamp = env / ".installed"
    built = stamp.read_text().split()[0] if stamp.is_file() and stamp.read_text().strip() else ""
    lock = Path(__file__).resolve().parents[2] / "images" / "cuda" / "requirements.lock"
    if lock.is_file() and built != hashlib.sha256(lock.read_bytes()).hexdigest():
        return (
            "GPU environment",
            NO,
            f"{env} was not built from this checkout's {lock.name}: "
            + ("run `make gpu-env` again"),
        )
    return "GPU environment", OK, f"{env} (images/cuda/requirements.lock {built[:12]})"


def _jax() -> Row:
    from runner.backends import brax

    if brax.available():
        return "JAX devices", NO, str(brax.available())
    python = brax.interpreter() or sys.executable
    try:
        out = subprocess.run(
            [python, "-c", JAX_PROBE], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "JAX devices", NO, f"{python}: {exc}"
    if out.returncode != 0:
        return "JAX devices", NO, (out.stderr.strip().splitlines() or ["failed"])[-1]
    version, *devices = out.stdout.split()
    return "JAX devices", OK, f"jax {version}: {', '.join(devices)} ({python})"


def _isaac() -> list[Row]:
    from runner.backends import isaaclab

    reason = isaaclab.available()
    if reason:
        return [("Isaac Lab (Python 3.12)", NO, reason), ("Isaac Sim", NO, "needs Isaac Lab's env")]
    try:
        reg = isaaclab.registry()
    except RunnerError as exc:
        return [("Isaac Lab (Python 3.12)", NO, str(exc)), ("Isaac Sim", NO, "unknown")]
    lab = f"Isaac Lab {reg['isaaclab']}, Python {reg['python']}, {len(reg['tasks'])} tasks"
    sim = ("Isaac Sim", OK, "installed") if reg.get("isaacsim") else ("Isaac Sim", NO, ISAACSIM_WHY)
    return [("Isaac Lab (Python 3.12)", OK, f"{lab} ({isaaclab.interpreter()})"), sim]


def _cuda() -> Row:
    if shutil.which("nvidia-smi") is None:
        return "CUDA driver", NO, "no NVIDIA driver (nvidia-smi not found): CPU only"
    try:
        out = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "CUDA driver", NO, f"nvidia-smi failed: {exc}"
    driver = re.search(r"Driver Version:\s*([\d.]+)", out)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", out)
    if not driver:
        return "CUDA driver", NO, "nvidia-smi found no driver or GPU"
    return "CUDA driver", OK, f"driver {driver.group(1)}, CUDA {cuda.group(1) if cuda else '?'}"


def accelerator_rows() -> list[Row]:
    return [_gpu_env(), _jax(), *_isaac(), _cuda()]
