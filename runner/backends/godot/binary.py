"""An exported game binary, checked before it is launched: executable, built for this machine's
architecture, and its dynamic loader present (an rlcrate export names the loader it carries in
`GAME.libs/`, by absolute path; a game moved after its export has lost it).

Only the ELF header and program headers are read: the file is never run to find out.
"""

from __future__ import annotations

import os
import platform
import struct
from pathlib import Path

# e_machine values (the ELF specification's) of the architectures Godot exports for.
MACHINES = {3: "x86_32", 62: "x86_64", 40: "arm32", 183: "arm64", 243: "rv64"}
HOST = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}
_PT_INTERP = 3


def problem(path: Path) -> str | None:
    """Why `path` cannot run here as an exported game, in a few words; None when it can."""
    if not os.access(path, os.X_OK):
        return "is not executable (chmod +x it, or give the exported game binary)"
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:2] == b"#!":
                return None  # a launcher script of the user's own: its interpreter runs it
            if head[:4] != b"\x7fELF":
                return "is neither an ELF executable nor a script (not an exported game binary)"
            if head[4] != 2 or head[5] != 1:
                return "is not a 64-bit little-endian ELF executable"
            machine = struct.unpack_from("<H", head, 18)[0]
            arch = MACHINES.get(machine, f"ELF machine {machine}")
            host = HOST.get(platform.machine(), platform.machine())
            if arch != host:
                return f"is a game for {arch}, and this machine is {host} (export it for {host})"
            interp = _interpreter(f, head)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if interp and not Path(interp).exists():
        return (
            f"needs the dynamic loader {interp}, which does not exist (a game exported by "
            "`rlcrate godot export` and moved since? export it again where it runs)"
        )
    return None


def _interpreter(f, head: bytes) -> str | None:
    """The PT_INTERP path of a 64-bit little-endian ELF file, or None (static)."""
    phoff = struct.unpack_from("<Q", head, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    for i in range(min(phnum, 256)):
        f.seek(phoff + i * phentsize)
        kind, _flags, offset, _va, _pa, size = struct.unpack("<IIQQQQ", f.read(40))
        if kind == _PT_INTERP and 0 < size < 4096:
            f.seek(offset)
            return f.read(size).rstrip(b"\0").decode(errors="replace")
    return None
