"""provenance.json: what ran, where, with what."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runner import __version__


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 10) -> str | None:
    try:
        out = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_info(path: Path) -> dict[str, Any] | None:
    if shutil.which("git") is None:
        return None
    commit = _run(["git", "rev-parse", "HEAD"], cwd=path)
    if commit is None:
        return None
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=path)
    return {
        "commit": commit,
        "dirty": bool(dirty),
        "describe": _run(["git", "describe", "--always", "--dirty"], cwd=path),
    }


def cpu_info() -> dict[str, Any]:
    model = platform.processor() or None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "model": model,
        "count": os.cpu_count(),
        "usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def gpu_info() -> dict[str, Any]:
    if shutil.which("nvidia-smi") is None:
        return {"gpus": [], "driver": None}
    out = _run(
        ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    )
    gpus = [
        dict(zip(("name", "memory", "driver"), (x.strip() for x in line.split(",")), strict=False))
        for line in (out or "").splitlines()
        if line.strip()
    ]
    return {"gpus": gpus, "driver": gpus[0]["driver"] if gpus else None}


def packages() -> dict[str, str]:
    return dict(
        sorted(
            (d.metadata["Name"], d.version)
            for d in importlib.metadata.distributions()
            if d.metadata["Name"]
        )
    )


def backend_programs(backends: set[str]) -> dict[str, Any]:
    """The external programs (path, version) the run's backends use, by name; `godot` is always
    present (None when no backend of the run uses Godot), as provenance.json has always had it."""
    from runner.backends import get_backend

    out: dict[str, Any] = {"godot": None}
    for name in sorted(backends):
        try:
            out.update(get_backend(name).versions())
        except Exception as exc:  # provenance records what it can
            out[name] = {"error": str(exc)}
    return out


def _determinism(backends: set[str]) -> dict[str, Any]:
    """`rlcrate check-determinism` results recorded for this environment and these backends."""
    try:
        from runner.determinism import recorded

        return recorded(backends)
    except Exception as exc:  # provenance records what it can
        return {"error": str(exc)}


def collect(
    argv: list[str], manifest_path: Path, backends: set[str], interpreters: dict[str, str]
) -> dict[str, Any]:
    """`interpreters`: variant -> the Python its units run with (as in resolved.yaml)."""
    pkgs = packages()
    return {
        "rlcrate": __version__,
        "argv": argv,
        "cwd": os.getcwd(),
        "manifest": str(manifest_path.resolve()),
        "git": git_info(manifest_path.resolve().parent),
        "rlcrate_source_git": git_info(Path(__file__).resolve().parent),
        "python": {
            "version": sys.version,
            "executable": sys.executable,
            "implementation": platform.python_implementation(),
        },
        "unit_interpreters": interpreters,
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "libc": "-".join(platform.libc_ver()),
        },
        "host": socket.gethostname(),
        "cpu": cpu_info(),
        "gpu": gpu_info(),
        "torch": pkgs.get("torch"),
        "cuda": _run([sys.executable, "-c", "import torch; print(torch.version.cuda)"], timeout=60)
        if "torch" in pkgs and shutil.which("nvidia-smi")
        else None,
        **backend_programs(backends),
        "image": {
            "tag": os.environ.get("RLCRATE_IMAGE"),
            "digest": os.environ.get("RLCRATE_IMAGE_DIGEST"),
        },
        "packages": pkgs,
        "determinism": _determinism(backends),
        "started": time.time(),
        "started_iso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": None,
        "units": {},
    }
