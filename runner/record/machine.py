"""What this machine is: its CPU, GPUs, usable cores and free memory (for provenance, doctor,
bench hosts and the resource warnings)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any


def _run(cmd: list[str], timeout: float = 10) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


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


def cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def memory_mb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
