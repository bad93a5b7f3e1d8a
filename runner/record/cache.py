"""Where rlcrate keeps what it remembers between runs on this machine: `RLCRATE_CACHE_DIR`, else
`$XDG_CACHE_HOME/rlcrate`, else `~/.cache/rlcrate`. Everything in it can be deleted at any time;
it only costs a recheck."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("RLCRATE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rlcrate"
    )
    return Path(base)


def unusable(exc: OSError) -> str:
    """Why writing under the cache failed, in words that name the setting: the folder is a
    file, or cannot be written."""
    where = cache_dir()
    setting = "RLCRATE_CACHE_DIR" if os.environ.get("RLCRATE_CACHE_DIR") else "the cache folder"
    if where.exists() and not where.is_dir():
        return f"{setting} {where} is not a folder"
    return f"{setting} {where} cannot be written ({exc.strerror or exc})"
