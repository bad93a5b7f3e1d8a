"""A unit's directory as bytes: how units travel between a driver and nodes with no shared disk.

Only regular files travel (no links, nothing outside the unit directory); unpacking refuses any
member whose path would leave the target directory.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def pack(unit_dir: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        if unit_dir.is_dir():
            for path in sorted(unit_dir.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    tar.add(path, arcname=path.relative_to(unit_dir).as_posix(), recursive=False)
    return buf.getvalue()


def unpack(data: bytes, unit_dir: Path) -> None:
    unit_dir.mkdir(parents=True, exist_ok=True)
    root = unit_dir.resolve()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            target = (root / member.name).resolve()
            if not member.isfile() or root not in target.parents:
                raise ValueError(f"refusing {member.name!r} in a unit's files")
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            assert src is not None
            tmp = target.with_name(f".{target.name}.unpack")
            tmp.write_bytes(src.read())
            tmp.replace(target)
