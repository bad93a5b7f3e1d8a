"""The kill-for-resume ability: a unit that stops itself dead at a step it is told, as a lost
machine would stop it, for `rlcrate check-determinism --resume` and the exact-resume tests.

A trainer declares the ability by deriving from `abilities.KillForResume` and calls
`KillHook.check(steps)` after every vector step of its loop. `RLCRATE_KILL_AT_STEP=N` (an env
step, or a fraction such as 0.6 of `train.timesteps`) makes the unit send itself SIGKILL at its
first step at or past N: no handler runs, nothing is flushed. With `RLCRATE_KILL_SIGNAL=TERM`,
SIGTERM instead: the stop a unit hears from its executor (Ctrl-C, Slurm's signal before the time
limit). With `RLCRATE_KILL_RECORD=FILE`, the hook first writes `{"asked": N, "step": S}` there
(closed before the signal), so the check can tell that the kill happened, and at which step.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

KILL_ENV = "RLCRATE_KILL_AT_STEP"
KILL_SIGNAL_ENV = "RLCRATE_KILL_SIGNAL"  # KILL (default) or TERM: a stop the unit hears
KILL_RECORD_ENV = "RLCRATE_KILL_RECORD"


class KillHook:
    """`RLCRATE_KILL_AT_STEP`: the step at which the unit signals itself, once."""

    def __init__(self, budget: int) -> None:
        self.due = kill_step(os.environ.get(KILL_ENV, ""), budget)
        name = os.environ.get(KILL_SIGNAL_ENV, "KILL")
        self.signal = signal.SIGTERM if name == "TERM" else signal.SIGKILL
        self.record = os.environ.get(KILL_RECORD_ENV) or None

    def check(self, steps: int) -> None:
        if self.due is not None and steps >= self.due:
            if self.record is not None:
                Path(self.record).write_text(json.dumps({"asked": self.due, "step": steps}))
            self.due = None
            os.kill(os.getpid(), self.signal)


def kill_step(value: str, budget: int) -> int | None:
    """The env step `RLCRATE_KILL_AT_STEP` names (a count, or a fraction of `budget`); None
    when it names none."""
    if value.isdigit():
        return int(value)
    try:
        fraction = float(value)
    except ValueError:
        return None
    return int(fraction * budget) if 0 < fraction < 1 else None


def kill_problem(returncode: int, record: Any, asked: int, vector: int) -> str | None:
    """Why a unit told to kill itself at env step `asked` was not killed there (None: it was):
    it must have ended by SIGKILL, with a record (`RLCRATE_KILL_RECORD`'s content) of a step at
    or past `asked` and within one vector step (`vector` envs) of it."""
    if returncode != -signal.SIGKILL:
        how = f"exit status {returncode}" if returncode >= 0 else f"signal {-returncode}"
        return f"it was not killed (it ended with {how}, not SIGKILL)"
    if not isinstance(record, dict) or not isinstance(record.get("step"), int):
        return "it was killed without recording the step (RLCRATE_KILL_RECORD)"
    step = record["step"]
    if not asked <= step < asked + max(vector, 1):
        return f"it was killed at env step {step}, not at its first step at or past {asked}"
    return None
