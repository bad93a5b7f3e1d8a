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
from pathlib import Path

from runner.errors import RunnerError

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


def _backend_rows() -> list[Row]:
    """Each backend's own rows (JAX's devices, Isaac Lab and Isaac Sim)."""
    from runner.backends import get_backend, names

    rows = []
    for name in names():
        try:
            found = get_backend(name).doctor_rows()
        except RunnerError as exc:
            found = [(f"backend {name}", False, str(exc))]
        rows += [(what, OK if ok else NO, detail) for what, ok, detail in found]
    return rows


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
    return [_gpu_env(), *_backend_rows(), _cuda()]
