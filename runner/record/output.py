"""Where a command writes a file the user named (`archive -o`, `export -o`): checked before
anything is written, so that no run's own file, no device and no file the user already has is
replaced by accident."""

from __future__ import annotations

import errno
import stat
from pathlib import Path

from runner.errors import UserInputError

# A folder holding one of these is a run directory (`resolved.yaml`) or a study's
RUN_MARKERS = ("resolved.yaml",)

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


def run_dir_holding(path: Path) -> Path | None:
    """The run directory `path` would land in (itself or a folder above it), or None. `path`'s
    folder is resolved; `path` itself is not followed (a link there is what gets replaced)."""
    lands = path.parent.resolve() / path.name
    for folder in (lands, *lands.parents):
        if any((folder / marker).is_file() for marker in RUN_MARKERS):
            return folder
    return None


def kind_of(path: Path) -> str | None:
    """What is at `path` (not followed): None when nothing, "a regular file", or what it is."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return None
        raise
    if stat.S_ISREG(mode):
        return "a regular file"
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def check_output(path: Path, *, option: str = "-o", force: bool = False, what: str = "") -> None:
    """Refuse to write `path` where it is inside a run directory, where something other than a
    regular file is there, or (without `force`) where a file is there already. `what`: what it
    would be written as, for the message ("the export's record")."""
    name = f"{option} {path}" + (f" ({what})" if what else "")
    run = run_dir_holding(path)
    if run is not None:
        raise UserInputError(
            f"{name}: refused, it is inside the run directory {run} (it would replace or join "
            "the run's own files); write it elsewhere"
        )
    kind = kind_of(path)
    if kind is None:
        return
    if kind != "a regular file":
        raise UserInputError(f"{name}: refused, it is {kind}; {option} writes a regular file")
    if not force:
        raise UserInputError(
            f"{name}: a file is there already; pass --force to replace it, or name another file"
        )


def write_failed(path: Path, exc: OSError, *, option: str = "-o") -> Exception:
    """The error to raise when writing `path` (or its temporary file beside it) failed: one line
    naming the target, never the temporary file; a read-only file system or no permission is
    bad input (exit 2), a full disk the machine's failure (exit 1)."""
    from runner.errors import RunnerError

    why = exc.strerror or str(exc)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return UserInputError(f"{option} {path}: cannot write there ({why}); nothing was written")
    return RunnerError(f"{option} {path}: writing it failed ({why}); nothing was written")
