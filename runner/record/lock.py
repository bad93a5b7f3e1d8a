"""One runner per run directory: an advisory lock held while a runner uses it.

The lock is `flock` on `<run_dir>/.lock`, so the kernel drops it when the runner exits, however it
exits (kill -9 included): there is never a stale lock to clear by hand. The file holds the pid of
the holder, only to name it in the message.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from runner.errors import UserInputError

LOCK_NAME = ".lock"
_held: dict[Path, int] = {}  # run dir -> fd, so one process may enter the same lock twice
NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


@contextlib.contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock; UserInputError at once if another process holds it."""
    key = run_dir.resolve()
    if key in _held:
        yield
        return
    fd = _open(run_dir)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise UserInputError(
            f"{run_dir}: in use by another runner (pid {holder}); wait for it or stop it first"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # a full disk: the lock holds without the pid
    _held[key] = fd
    try:
        yield
    finally:
        del _held[key]
        os.close(fd)  # releases the flock


def _open(run_dir: Path) -> int:
    """The lock file's descriptor. Every user of the lock writes into the run directory, so one
    that cannot be written is the user's to fix, named as the run, not as `.lock`."""
    try:
        if run_dir.is_dir() and not os.access(run_dir, os.W_OK):  # .lock itself may be writable
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno not in NOT_WRITABLE:
            raise
        raise unwritable_run(run_dir, exc) from None


def unwritable_run(run_dir: Path, exc: OSError, doing: str = "this command writes into it") -> (
    UserInputError
):  # fmt: skip
    """The one line for a run directory that cannot be written (a read-only mount, no
    permission): the run named, never the temporary or lock file the write failed on."""
    return UserInputError(
        f"{run_dir}: the run directory cannot be written ({exc.strerror or exc}); {doing}: "
        "copy the run somewhere writable (cp -r) and give the copy"
    )


def require_writable(run_dir: Path, doing: str) -> None:
    """UserInputError (`unwritable_run`) unless this process may write into `run_dir`."""
    if run_dir.is_dir() and not os.access(run_dir, os.W_OK):
        code = errno.EROFS if os.statvfs(run_dir).f_flag & os.ST_RDONLY else errno.EACCES
        raise unwritable_run(run_dir, OSError(code, os.strerror(code)), doing)


def runner_holds(run_dir: Path) -> bool | None:
    """Whether a runner holds the run's lock now (it still runs); None when this cannot be told
    (no lock file: a run made elsewhere, or unreadable). Only looks: the lock is tried shared and
    let go at once, and the file is neither made nor written."""
    if Path(run_dir).resolve() in _held:
        return True
    try:
        fd = os.open(run_dir / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing lets the shared lock go
    return False
