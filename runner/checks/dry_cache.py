"""Dry constructions that passed, remembered by everything they depend on, so that a rerun of an
unchanged experiment does not build its envs and models again before the units do.

A variant's key is a hash of its resolved config (the sections a construction reads; not the
training budget), the Python its units run with and that Python's import path (an installation's
folders by their modification time: installing, upgrading or removing a package changes it; any
other folder, the working one and PYTHONPATH's, by every module importable from it), rlcrate's own
source files and the files its env is made from (a game), each by path, size and modification time.
Never remembered: a warm start (its parent is loaded, and checked by `checks.lineage` instead), a
GPU device (the machine's devices can change without a file changing). A unit Python other than the
runner's own (Isaac Lab's, Brax's GPU environment) is asked for its own import path and rlcrate
files (`python -m runner.checks.dry_cache`, a second's start, against the tens of seconds its
construction takes); one that cannot answer is never remembered. Only passes are kept;
`validate --deep` always builds.
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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `python -m runner.checks.dry_cache` in a unit Python imports no pydantic
    from runner.manifest.resolved import ResolvedVariant

# Sections no construction reads (the run's name, its evaluation protocol, tracking, where the
# units run: that is `python`), besides those the construction itself leaves out: a renamed copy
# of a manifest, or one with another eval protocol, keeps the remembered pass.
UNREAD = {"matrix", "expect", "bench", "seeds", "name", "eval", "track", "image"}
# Nor how long the units train or how often they save (a construction trains nothing): the
# commonest edit between two runs, a longer budget, keeps the pass too.
UNREAD_TRAIN = {"timesteps", "checkpoint_every", "log_interval"}
EXCLUDE: dict[str, Any] = {**dict.fromkeys(UNREAD, True), "train": UNREAD_TRAIN}  # model_dump's
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


def _package(root: Path) -> Iterator[Path]:
    """A regular package's modules, subpackages included."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if (Path(folder, d) / "__init__.py").is_file())
        yield from (Path(folder, f) for f in sorted(files) if f.endswith(".py"))


def _importable(folder: Path) -> list[list[object]] | None:
    """Every module importable from a folder of the path that is not an installation (the
    working folder, which `python -m` puts first; PYTHONPATH's folders): its top-level modules
    and `.pth` files and its packages' modules, each by size and modification time, so that an
    edit in place counts. Its own modification time says nothing there (runs are made and
    manifests saved in it). None when there are more than MAX_FILES."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = [folder / n for n in names if n.endswith((".py", ".pth"))]
    for name in names:
        if (folder / name / "__init__.py").is_file():
            found += _package(folder / name)
        if len(found) > MAX_FILES:
            return None
    return [_stat(p) for p in found]


def _installed(entry: Path) -> bool:
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return any(entry == p or p in entry.parents for p in prefixes)


def _import_path() -> list[object] | None:
    """The units' import path: an installation's folder by its modification time (installing,
    upgrading or removing a package changes it), any other folder by its modules."""
    out: list[object] = []
    for entry in [Path.cwd(), *(Path(p) for p in sys.path if p)]:
        entry = entry.resolve()
        if _installed(entry) or not entry.is_dir():
            out.append(_stat(entry))
            continue
        modules = _importable(entry)
        if modules is None:
            return None
        out.append([str(entry), modules])
    return out


def _source() -> list[list[object]]:
    package = Path(__file__).resolve().parents[1]
    return [_stat(p) for p in sorted(package.rglob("*.py"))]


ASK_S = 120.0  # another Python's answer: its start and a walk of its import path


def environment(python: str | None = None) -> list[object] | None:
    """What the keys of the variants whose units run with `python` (None: the runner's own)
    share: that Python, its import path and the rlcrate files it imports (walked once per run
    and Python, not once per variant); None when the path is too large to walk, or another
    Python cannot tell."""
    if python in (None, sys.executable):
        path = _import_path()
        return None if path is None else [sys.executable, sys.version, path, _source()]
    import subprocess

    try:
        done = subprocess.run(
            [python, "-m", "runner.checks.dry_cache"], capture_output=True, text=True,
            timeout=ASK_S, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        answer = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return answer if isinstance(answer, list) and answer else None


def key(
    variant: ResolvedVariant,
    env: list[object] | None,
    *,
    check_device: bool,
) -> str | None:
    """The variant's key (`env`: `environment(python)` of the Python its units run with, which
    names that Python), or None when its construction is never remembered."""
    from runner.backends import get_backend

    cfg = variant.config
    if env is None:
        return None
    if variant.parent is not None or cfg.train.init_from is not None:
        return None
    if check_device and cfg.algo.compute_device() not in ("cpu", "auto"):
        return None
    try:
        game = get_backend(cfg.env.backend).env_files(cfg.env)
    except Exception:  # the construction itself will say what is wrong with the env
        return None
    files = _files(Path(game[1])) if game else []
    if files is None:
        return None
    parts = {
        "config": cfg.model_dump(mode="json", exclude=EXCLUDE),
        "check_device": check_device,
        "environment": env,
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


if __name__ == "__main__":  # asked by a runner whose units run with this Python
    print(json.dumps(environment(), default=str))
