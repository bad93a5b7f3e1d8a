"""Ending a unit's process (or the dry construction's) without Python's finalization.

A process that imported torch spends 0.5 s tearing its modules down at exit, one that trained
with Stable-Baselines3 about 0.9 s (measured here: the last line printed to the process gone),
and the runner waits for it before the summary. Once everything a trainer wrote is closed, that
teardown does nothing the run keeps: `end` flushes the standard streams, runs what was registered
with `atexit` (Godot's supervisor ending its games, multiprocessing's workers, logging), then
ends the process at once. Only where every trainer the process ran says it closes what it writes
(`Trainer.QUICK_EXIT`); otherwise, and for a trainer that did not say, Python exits as usual.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import NoReturn

_votes: list[bool] = []


def allow(ok: bool) -> None:
    """Record whether a trainer this process ran may end without finalization."""
    _votes.append(ok)


def end(code: int) -> NoReturn:
    """Exit with `code`: at once if every trainer allowed it, else as `sys.exit` does."""
    if not (_votes and all(_votes)):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing left
            stream.flush()
    atexit._run_exitfuncs()  # what the process asked for at exit still runs
    os._exit(code)
