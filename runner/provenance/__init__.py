"""provenance.json: what ran, where, with what."""

from __future__ import annotations

import functools
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
from runner.record.machine import cpu_info, gpu_info
from runner.record.provenance import DeterminismCheck


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


def packages() -> dict[str, str]:
    """Every installed distribution's version (read once per process, and remembered on this
    machine by `installed.metadata_files()`: reading every distribution's metadata costs a run
    a third of a second here)."""
    return dict(_packages())


@functools.cache
def _packages() -> dict[str, str]:
    from runner.provenance import installed

    return installed.remembered(_read_packages)


def _read_packages() -> dict[str, str]:
    return dict(
        sorted(
            (d.metadata["Name"], d.version)
            for d in importlib.metadata.distributions()
            if d.metadata["Name"]
        )
    )


def backend_programs(backends: set[str]) -> dict[str, Any]:
    """The external programs (path, version) the run's backends use (`versions()`), by name;
    provenance.json records each at its top level and their names under PROGRAMS."""
    from runner.backends import get_backend

    out: dict[str, Any] = {}
    for name in sorted(backends):
        try:
            out.update(get_backend(name).versions())
        except Exception as exc:  # provenance records what it can
            out[name] = {"error": str(exc)}
    return out


PROGRAMS = "programs"  # provenance.json: the names of the external programs it records


def programs_of(prov: dict[str, Any]) -> dict[str, Any]:
    """The external programs a provenance.json records, by name. One written before it named
    them (PROGRAMS) is read by shape: every top-level record of a path and a version."""
    names = prov.get(PROGRAMS)
    if isinstance(names, list):
        return {n: prov.get(n) for n in names if isinstance(n, str)}
    return {k: v for k, v in prov.items() if isinstance(v, dict) and {"path", "version"} <= set(v)}


def _determinism(backends: set[str]) -> dict[str, Any]:
    """`rlcrate check-determinism` results recorded for this environment and these backends
    (each through its model: a damaged cache records none)."""
    from runner.provenance.determinism import recorded

    return {k: v.model_dump(mode="json") for k, v in recorded(backends).items()}


def resume_levels(
    backends: set[str], checked: dict[str, dict[str, DeterminismCheck]]
) -> dict[str, str]:
    """Per backend, how a stopped unit resumes (`determinism.resume_level`), overruled by a
    `check-determinism --resume` recorded here, with a trainer of this run, that found
    otherwise (`checked`: backend -> trainer -> result)."""
    from runner.provenance.determinism import resume_level

    out = {}
    for name in sorted(backends):
        found = list(checked.get(name, {}).values())
        differs = next((c for c in found if c.result != "exact"), found[0] if found else None)
        try:
            out[name] = resume_level(name, checked=differs)
        except Exception as exc:  # provenance records what it can
            out[name] = f"unknown: {exc}"
    return out


def _resume_checked(trainers: dict[str, set[str]]) -> dict[str, dict[str, DeterminismCheck]]:
    """`rlcrate check-determinism --resume` results recorded for this environment, for the
    trainers this run's units train with on each backend."""
    from runner.provenance.determinism import recorded_resume

    return recorded_resume(trainers)


def image_record() -> dict[str, str | None]:
    """The image this runner runs in (its tag, digest; a .sif's also the image it was exported
    from), as the command that started it said (RLCRATE_IMAGE...); nulls outside one."""
    found = {
        "tag": os.environ.get("RLCRATE_IMAGE"),
        "digest": os.environ.get("RLCRATE_IMAGE_DIGEST"),
    }
    source = os.environ.get("RLCRATE_IMAGE_SOURCE")
    return {**found, "source": source} if source else found


def collect(
    argv: list[str],
    manifest_path: Path,
    backends: set[str],
    interpreters: dict[str, str],
    trainers: dict[str, set[str]] | None = None,
) -> dict[str, Any]:
    """`interpreters`: variant -> the Python its units run with (as in resolved.yaml);
    `trainers`: backend -> the trainers its units train with (none: no resume check applies)."""
    pkgs = packages()
    return {
        "rlcrate": __version__,
        "argv": argv,
        "cwd": os.getcwd(),
        "manifest": str(manifest_path.resolve()),
        "git": git_info(manifest_path.resolve().parent),
        "rlcrate_source_git": git_info(Path(__file__).resolve().parents[1]),
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
        **(programs := backend_programs(backends)),
        PROGRAMS: sorted(programs),
        "image": image_record(),
        "packages": pkgs,
        "determinism": _determinism(backends),
        "resume": resume_levels(backends, checked := _resume_checked(trainers or {})),
        "resume_checked": {
            b: {t: v.model_dump(mode="json") for t, v in per.items()} for b, per in checked.items()
        },
        "started": time.time(),
        "started_iso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": None,
        "units": {},
    }
