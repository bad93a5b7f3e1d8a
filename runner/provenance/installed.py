"""The installed distributions' versions, remembered between runs by what they are read from.

Listing every distribution (importlib.metadata) parses each one's METADATA file. The list is
remembered in rlcrate's cache (`record.cache`) under a key made of the interpreter and, for
every folder of the import path, each distribution's metadata file (`*.dist-info/METADATA`,
`*.egg-info/PKG-INFO`) by name, size and modification time, and each `.egg-link` and `.pth`
file likewise: installing, upgrading or removing a package, or an editable install changing
its version, changes the key. What is read back is checked to be a mapping of names to
version strings; anything else is ignored and the list read afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable

PACKAGES_DIR = "packages"
METADATA = {".dist-info": "METADATA", ".egg-info": "PKG-INFO"}
OTHER = (".egg-link", ".pth", ".egg")


def _stat(path: str) -> list[object]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns]


def metadata_files() -> list[object]:
    """What the installed distributions are read from, folder by folder of the import path."""
    out: list[object] = [sys.executable, sys.version]
    for entry in sys.path:
        folder = entry or os.getcwd()
        try:
            names = sorted(e.name for e in os.scandir(folder))
        except OSError:  # a zip or a missing folder on the path
            out.append(_stat(folder))
            continue
        files = []
        for name in names:
            ext = os.path.splitext(name)[1]
            if ext in METADATA:
                files.append(_stat(os.path.join(folder, name, METADATA[ext])))
            elif ext in OTHER:
                files.append(_stat(os.path.join(folder, name)))
        out.append([folder, files])
    return out


def _valid(data: object) -> bool:
    return isinstance(data, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    )


def remembered(read: Callable[[], dict[str, str]]) -> dict[str, str]:
    """`read()`'s result, from the cache when nothing it is read from has changed."""
    from runner.record.cache import cache_dir

    key = json.dumps(metadata_files(), default=str).encode()
    path = cache_dir() / PACKAGES_DIR / f"{hashlib.sha256(key).hexdigest()}.json"
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text())
        if _valid(data):
            return data
    found = read()
    from runner.record.rundir import write_text_atomic

    with contextlib.suppress(OSError):  # an unwritable cache only costs the next run a reread
        write_text_atomic(path, json.dumps(found), durable=False)
    return found
