"""`rlcrate doctor`'s accelerator rows: JAX's devices, Isaac Lab and Isaac Sim, CUDA and driver.

Each row asks the Python that would run the backend's units (Brax's venv, Isaac Lab's 3.12
environment), since the runner's own Python may have neither package.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from runner.errors import RunnerError

Row = tuple[str, str, str]
OK, NO = "[green]ok[/]", "[red]no[/]"


def _backend_rows() -> list[Row]:
    """Each backend's own rows (JAX's devices, Isaac Lab and Isaac Sim)."""
    from runner.backends import BACKENDS, get_backend

    rows = []
    for name in BACKENDS:
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
    return [*_backend_rows(), _cuda()]
