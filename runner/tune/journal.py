"""The study's journal (`study.journal`, Optuna's JournalStorage file: one JSON line per change),
checked before Optuna reads it, and the storage opened without Optuna's own file lock.

- A last line without its newline is a write the runner was killed in: it is cut off (said in
  one line) and the study goes on from the line before. Any other line that is not one of
  Optuna's records is damage the runner did not make: refused in one line naming the file and
  line, before anything is appended after it (Optuna would append, then fail on every resume).
- Optuna's file lock (`study.journal.lock`, a symbolic link) spins at full CPU when it dangles
  and waits 30 s when a killed runner left it; rlcrate holds the run directory's own lock
  (`runner.record.lock`, released by the kernel however the holder ends) for the whole session,
  so no other runner writes this journal and Optuna's lock is not taken at all. A leftover one
  is removed and said.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

from runner.errors import RunFileError, first_line
from runner.record.tune import STUDY_FILE

OPTUNA_LOCK = STUDY_FILE + ".lock"  # what Optuna's JournalFileSymlinkLock makes


class RunDirLocked:
    """Optuna's journal lock, held through the run directory's lock (module docstring): the
    session holds that one from before the journal is opened until after its last write."""

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        return None


def repair(path: Path) -> list[str]:
    """Check the journal line by line (module docstring); returns what was repaired, one line
    each. RunFileError for a line that is not a journal record."""
    notes = _clear_lock(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return notes
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with its newline
    for number, line in enumerate(lines, 1):
        why = _not_a_record(line)
        if why is not None:
            raise RunFileError(
                f"{path}:{number}: not one of Optuna's journal records ({why}); the study's "
                "journal is damaged, nothing was run (restore it from a copy, or start the study "
                "again)"
            )
    if tail:
        with path.open("r+b") as f:
            f.truncate(len(data) - len(tail))
            f.flush()
            os.fsync(f.fileno())
        notes.append(
            f"{path}:{len(lines) + 1}: its last line was cut off mid-write (the runner was "
            f"stopped while writing it); the {len(tail)} bytes were removed and the study goes "
            "on from the line before"
        )
    return notes


def _not_a_record(line: bytes) -> str | None:
    try:
        record = json.loads(line)
    except ValueError as exc:
        return f"not JSON: {first_line(exc, 120)}"
    if not isinstance(record, dict) or not isinstance(record.get("op_code"), int):
        return "a JSON value without an integer op_code"
    return None


def _clear_lock(path: Path) -> list[str]:
    lock = path.with_name(OPTUNA_LOCK)
    if not os.path.lexists(lock):
        return []
    lock.unlink(missing_ok=True)
    return [f"{lock}: removed a lock left by a runner that was stopped (this run's lock is held)"]


def storage(path: Path) -> Any:
    """Optuna's JournalStorage over `path`, its lock the run directory's (RunDirLocked)."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(path), lock_obj=cast(Any, RunDirLocked())))


def trials(path: Path, name: str) -> list[Any]:
    """The study's trials as the journal holds them (Optuna FrozenTrials; none when it holds no
    such study), read without writing to it: checked before the study is opened (`agree`)."""
    if not path.is_file():
        return []
    try:
        store = storage(path)
        found = [s for s in store.get_all_studies() if s.study_name == name]
        return list(store.get_all_trials(found[0]._study_id)) if found else []
    except (KeyError, ValueError, TypeError, AssertionError, AttributeError) as exc:
        raise unreadable(path, exc) from None


def unreadable(path: Path, exc: Exception) -> RunFileError:
    """Optuna could not replay a journal whose every line is JSON (a record of the wrong shape):
    one line naming it."""
    return RunFileError(
        f"{path}: Optuna cannot replay the study's journal ({first_line(exc, 160)}); it is "
        "damaged, nothing was run (restore it from a copy, or start the study again)"
    )
