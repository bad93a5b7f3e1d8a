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
