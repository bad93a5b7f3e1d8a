"""A command rlcrate asks something of and waits on (a container engine's version, its images),
bounded in time and leaving nothing behind.

`subprocess.run(..., timeout=)` kills the command it started but then waits for its output to
end, which never happens while a process the command started (a probe a hung engine runs) still
holds the pipe: the wait outlives the timeout. Here the command runs in a session of its own and
the whole session is killed on a timeout, on Ctrl-C or on SIGTERM, so the wait ends and no probe
is left running. Its output is read as UTF-8 with undecodable bytes replaced: an engine that
prints another encoding is read, not a UnicodeDecodeError.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import Any


def _kill_session(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        proc.communicate(timeout=5)


def _stop(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def ask(
    cmd: Sequence[str], timeout: float, *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`cmd`'s exit status and output, like `subprocess.run(capture_output=True, text=True)`;
    subprocess.TimeoutExpired after `timeout` seconds, OSError when it cannot start. Whatever
    ends the wait (a timeout, Ctrl-C, SIGTERM: as KeyboardInterrupt) kills the command's whole
    session first."""
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,  # its own process group: killed whole, never by the terminal
        env=env,
    )
    main = threading.current_thread() is threading.main_thread()
    old: Any = signal.signal(signal.SIGTERM, _stop) if main else None
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_session(proc)
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, old if old is not None else signal.SIG_DFL)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
