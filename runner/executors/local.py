"""Local executor: each unit in its own child process (own session), at most N at once.

A unit whose Python has not recorded the unit's start within START_TIMEOUT_S (an interpreter
that hangs) is ended and marked failed, so no wait of the runner is unbounded.
Stopping (Ctrl-C/SIGTERM reaching the runner) sends SIGTERM to every running unit, which saves a
checkpoint and marks itself interrupted; a unit that does not stop within the grace period is
killed with its whole process group, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from runner.executors import unit_command
from runner.executors.base import Executor, ExecutorSettings, Plan, Tick
from runner.record.rundir import UnitRef
from runner.record.status import read_status, write_status

GRACE_S = 60.0
TICK_S = 0.5  # the progress view's refresh while units run; a unit's end wakes the runner at once


class LocalSettings(ExecutorSettings):
    """None: how many units run at once is the manifest's `parallel.units` (0: as many as the
    CPUs allow)."""


# A unit records `running` within seconds of its Python starting; one that has not after this
# long (an interpreter that hangs before running any of rlcrate) is ended and failed.
START_TIMEOUT_S = 120.0


def start_timeout() -> float:
    try:
        return float(os.environ.get("RLCRATE_UNIT_START_TIMEOUT_S", START_TIMEOUT_S))
    except ValueError:
        return START_TIMEOUT_S


def _silent(run_dir: Path, unit: UnitRef, since: float) -> bool:
    """The unit has not recorded its start since `since` (epoch seconds)."""
    started = read_status(unit.dir(run_dir)).started
    return not (started is not None and started >= since - 1.0)


def _fail_silent(
    run_dir: Path, unit: UnitRef, p: subprocess.Popen[bytes], bound: float, python: str
) -> None:
    _kill_group(p)
    p.wait()
    write_status(
        unit.dir(run_dir),
        "failed",
        error=f"its Python ({python}) did not start the unit within {bound:.0f} s (hung?); "
        "ended it",
        finished=time.time(),
    )


def _die_with_parent() -> None:
    """In the child before exec: die with the runner, even when it is SIGKILLed (Linux).

    A runner stopped politely (Ctrl-C, SIGTERM) asks its units to checkpoint first; a runner
    killed outright takes its units with it, and `--resume` reruns them from their last
    periodic checkpoint, or from scratch (then bit-identical to an uninterrupted run).
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _start(
    run_dir: Path, unit: UnitRef, jobs: list[str], pythons: Mapping[str, str | None]
) -> subprocess.Popen[bytes]:
    unit_dir = unit.dir(run_dir)
    unit_dir.mkdir(parents=True, exist_ok=True)
    with open(unit_dir / "unit.log", "ab") as log:
        return subprocess.Popen(
            unit_command(run_dir, unit, jobs, pythons),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)


def stop_all(procs: dict[UnitRef, subprocess.Popen[bytes]], grace: float = GRACE_S) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        _kill_group(p)  # whatever the unit started (env workers, games) goes with it
        p.wait()


def wait_for_an_exit(procs: list[subprocess.Popen[bytes]], timeout: float) -> None:
    """Until one of `procs` ends or `timeout` seconds pass, whichever is first (a process
    descriptor per child, Linux 5.3 and later; elsewhere the whole `timeout`)."""
    fds: list[int] = []
    try:
        with contextlib.suppress(AttributeError, OSError):  # no pidfd_open: a plain sleep
            for p in procs:
                fds.append(os.pidfd_open(p.pid))
        if len(fds) == len(procs):
            poller = select.poll()  # not select.select: no limit on the descriptors' numbers
            for fd in fds:
                poller.register(fd, select.POLLIN)
            poller.poll(timeout * 1000)
        else:
            time.sleep(timeout)
    finally:
        for fd in fds:
            os.close(fd)


def launch(plan: Plan, settings: LocalSettings, on_tick: Tick) -> dict[UnitRef, int]:
    run_dir, jobs, pythons, max_parallel = plan.run_dir, plan.jobs, plan.pythons, plan.max_parallel
    pending = list(plan.units)
    running: dict[UnitRef, subprocess.Popen[bytes]] = {}
    since: dict[UnitRef, float] = {}  # when each unit that has not yet said it started was
    results: dict[UnitRef, int] = {}
    bound = start_timeout()
    try:
        while pending or running:
            while pending and len(running) < max(1, max_parallel):
                unit = pending.pop(0)
                since[unit] = time.time()
                running[unit] = _start(run_dir, unit, jobs, pythons)
            for unit, p in list(running.items()):
                if p.poll() is not None:
                    results[unit] = p.returncode
                    _kill_group(p)  # stragglers of a finished unit
                    del running[unit]
                elif (
                    unit in since
                    and time.time() - since[unit] > bound
                    and _silent(run_dir, unit, since.pop(unit))
                ):
                    python = unit_command(run_dir, unit, jobs, pythons)[0]
                    _fail_silent(run_dir, unit, p, bound, python)
                    results[unit] = 1
                    del running[unit]
            on_tick()
            if running:  # the runner idles beside the units it waits for
                wait_for_an_exit(list(running.values()), TICK_S)
    except KeyboardInterrupt:
        stop_all(running)
        for unit, p in running.items():
            results[unit] = p.returncode
        raise
    return results


class Local(Executor[LocalSettings]):
    """A child process per unit, here, as many at once as the plan allows."""

    Settings = LocalSettings
    runs_here = True

    def launch(self, plan: Plan, settings: LocalSettings, on_tick: Tick) -> dict[UnitRef, int]:
        return launch(plan, settings, on_tick)
