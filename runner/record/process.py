"""Which process wrote a record, and whether it still runs.

A unit records its process in status.json while it runs: the pid, the kernel's start time of
that pid (clock ticks since boot, `/proc/PID/stat`), the boot, the host and the pid namespace.
A pid alone would be taken for any later process the kernel gives the same number; with its
start time and boot it names one process, so `rlcrate status` can tell a unit that still runs
from one whose process is gone (a runner killed with SIGKILL takes its units with it) without
signalling anything.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from pydantic import BaseModel, ConfigDict

PROC = Path("/proc")


class ProcessRef(BaseModel):
    """One process, as the process itself recorded it."""

    model_config = ConfigDict(extra="ignore")

    pid: int
    started: int | None = None  # clock ticks after boot (/proc/PID/stat field 22)
    boot: str | None = None  # /proc/sys/kernel/random/boot_id
    host: str = ""
    pid_ns: str | None = None  # /proc/self/ns/pid: a container's pids are not the host's


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


def start_ticks(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot); None when no such process runs here (a
    zombie, ended and not yet reaped, runs no more)."""
    stat = _read(PROC / str(pid) / "stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and ')'
    try:
        state, ticks = fields[0], int(fields[19])  # fields 3 and 22 of the whole line
    except (IndexError, ValueError):
        return None
    return None if state in ("Z", "X") else ticks


def _pid_ns() -> str | None:
    try:
        return os.readlink(PROC / "self" / "ns" / "pid")
    except OSError:
        return None


def this_process() -> ProcessRef:
    pid = os.getpid()
    return ProcessRef(
        pid=pid,
        started=start_ticks(pid),
        boot=_read(PROC / "sys" / "kernel" / "random" / "boot_id"),
        host=platform.node(),
        pid_ns=_pid_ns(),
    )


def still_running(ref: ProcessRef) -> bool | None:
    """Whether the recorded process still runs; None when this machine cannot tell (another
    host, boot or pid namespace, or no /proc)."""
    here = this_process()
    if ref.started is None or here.started is None or ref.boot is None:
        return None
    if (ref.host, ref.boot, ref.pid_ns) != (here.host, here.boot, here.pid_ns):
        return None
    return start_ticks(ref.pid) == ref.started
