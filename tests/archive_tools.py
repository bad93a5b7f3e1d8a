"""Altering real archives for the tests: read every member, change some, write them back."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

INDEX, SUMS = "rlcrate-archive.json", "SHA256SUMS"


def members(path: Path) -> tuple[str, dict[str, bytes]]:
    """(top folder, {path inside it: bytes}) of an archive, in order."""
    out: dict[str, bytes] = {}
    top = ""
    with tarfile.open(path, "r:gz") as tar:
        for m in tar:
            top, _, rel = m.name.partition("/")
            f = tar.extractfile(m)
            out[rel] = f.read() if f else b""
    return top, out


def resum(files: dict[str, bytes]) -> dict[str, bytes]:
    """Recompute SHA256SUMS and the index's sizes, as a careful forger would."""
    body = {k: v for k, v in files.items() if k not in (INDEX, SUMS)}
    index = json.loads(files[INDEX])
    index["sizes"] = {k: len(v) for k, v in body.items()}
    index_bytes = json.dumps(index, indent=2, sort_keys=True).encode()
    sums = {INDEX: hashlib.sha256(index_bytes).hexdigest()}
    sums |= {k: hashlib.sha256(v).hexdigest() for k, v in body.items()}
    text = "".join(f"{h}  {n}\n" for n, h in sums.items()).encode()
    return {INDEX: index_bytes, SUMS: text, **body}


def write(path: Path, top: str, files: dict[str, bytes], extra: Callable | None = None) -> Path:
    """Write members back as a tar.gz; `extra(tar)` may add raw entries (links, odd paths)."""
    with tarfile.open(path, "w:gz") as tar:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra:
            extra(tar)
    return path


def altered(src: Path, dst: Path, edit: Callable[[dict[str, bytes]], None], *, sums: bool) -> Path:
    top, files = members(src)
    edit(files)
    return write(dst, top, resum(files) if sums else files)
