"""Dry constructions that passed, remembered by everything they depend on, so that a rerun of an
unchanged experiment does not build its envs and models again before the units do.

A variant's key is a hash of its resolved config (as the construction reads it), the Python its
units run with and that Python's import path (each folder's modification time: installing,
upgrading or removing a package changes it), rlcrate's own source files and the files its env is
made from (a game), each by path, size and modification time. Anything else is never remembered:
a warm start (its parent is loaded, and checked by `checks.lineage` instead), a GPU device (the
machine's devices can change without a file changing), a unit Python other than the runner's
own. Only passes are kept; `validate --deep` always builds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from runner.manifest.resolved import ResolvedVariant

MAX_FILES = 20_000  # an env tree larger than this is not fingerprinted: it is always built
DRY_DIR = "dry"


def _stat(path: Path) -> list[object]:
    try:
        st = path.stat()
    except OSError:
        return [str(path), None]
    return [str(path), st.st_size, st.st_mtime_ns]


def _tree(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            yield Path(folder, name)


def _files(root: Path) -> list[list[object]] | None:
    out = []
    for i, path in enumerate(_tree(root)):
        if i >= MAX_FILES:
            return None
        out.append(_stat(path))
    return out


def _importable(folder: Path) -> list[list[object]]:
    """What `python -m` (the units) could import from the working folder, where runs are made
    and manifests saved, so its modification time says nothing: its modules and packages."""
    try:
        names = sorted(os.listdir(folder))[:MAX_FILES]
    except OSError:
        return []
    found = [folder / n for n in names if n.endswith((".py", ".pth"))]
    found += [folder / n for n in names if (folder / n / "__init__.py").is_file()]
    return [_stat(p) for p in found] + [_stat(p / "__init__.py") for p in found if p.is_dir()]


def _source() -> list[list[object]]:
    package = Path(__file__).resolve().parents[1]
    return [_stat(p) for p in sorted(package.rglob("*.py"))]


def key(variant: ResolvedVariant, python: str | None, *, check_device: bool) -> str | None:
    """The variant's key (`python`: the one its units run with, None for the runner's own), or
    None when its construction is never remembered."""
    from runner.backends import get_backend

    cfg = variant.config
    if variant.parent is not None or cfg.train.init_from is not None:
        return None
    if python not in (None, sys.executable):
        return None
    if check_device and cfg.algo.device not in ("cpu", "auto"):
        return None
    try:
        game = get_backend(cfg.env.backend).env_files(cfg.env)
    except Exception:  # the construction itself will say what is wrong with the env
        return None
    files = _files(Path(game[1])) if game else []
    if files is None:
        return None
    parts = {
        "config": cfg.model_dump(mode="json", exclude={"matrix", "expect", "bench", "seeds"}),
        "check_device": check_device,
        "python": [sys.executable, sys.version, [_stat(Path(p)) for p in sys.path if p]],
        "cwd": _importable(Path.cwd()),
        "rlcrate": _source(),
        "env_files": files,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _entry(digest: str) -> Path:
    from runner.record.cache import cache_dir

    return cache_dir() / DRY_DIR / digest


def passed(digest: str | None) -> bool:
    return digest is not None and _entry(digest).is_file()


def remember(digest: str | None) -> None:
    """Record a pass; a cache that cannot be written only costs the next run a rebuild."""
    if digest is None:
        return
    path = _entry(digest)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{time.time():.0f}\n")
