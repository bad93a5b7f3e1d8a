"""Stable-Baselines3's SubprocVecEnv with every wait bounded and a dead worker an error at once.

SB3 waits on each worker's pipe without a bound, and after a worker dies mid-step its close()
first waits for the answers of every worker, including those that already gave theirs: when the
last worker is the one that died, the unit then hangs for good (the first worker's death
surfaced, since nothing had been read yet). Here each wait polls, checks that its worker is
alive, and gives up after ANSWER_TIMEOUT_S; close() after a failure ends the workers instead of
waiting on them.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from stable_baselines3.common.vec_env import SubprocVecEnv

from runner.errors import EnvTimeout

POLL_S = 1.0
ANSWER_TIMEOUT_S = 600.0  # one step, reset or call of one env
JOIN_S = 10.0


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "its pipe closed"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


class _Pipe:
    """The parent's end of one worker's pipe, as SubprocVecEnv uses it (send, recv, close)."""

    def __init__(self, owner: BoundedSubprocVecEnv, index: int) -> None:
        self.owner, self.index = owner, index
        self.conn = owner.pipes[index]
        self.process = owner.processes[index]

    def _died(self) -> RuntimeError:
        self.owner.broken = True
        self.process.join(JOIN_S)
        n = len(self.owner.processes)
        return RuntimeError(
            f"env worker {self.index + 1} of {n} died ({_how(self.process.exitcode)})"
        )

    def send(self, msg: Any) -> None:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, ConnectionError, EOFError):
            raise self._died() from None

    def recv(self) -> Any:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not self.conn.poll(POLL_S):
            if not self.process.is_alive():
                raise self._died()
            if time.monotonic() > deadline:
                self.owner.broken = True
                raise EnvTimeout(
                    f"env worker {self.index + 1} did not answer within {ANSWER_TIMEOUT_S:.0f} s"
                )
        try:
            return self.conn.recv()
        except (EOFError, ConnectionError):
            raise self._died() from None

    def close(self) -> None:
        self.conn.close()


class BoundedSubprocVecEnv(SubprocVecEnv):
    def __init__(self, env_fns: list[Any], start_method: str | None = None) -> None:
        super().__init__(env_fns, start_method=start_method)
        self.broken = False
        self.pipes = list(self.remotes)
        self.remotes = [_Pipe(self, i) for i in range(len(self.pipes))]  # type: ignore[misc]

    def close(self) -> None:
        if self.closed:
            return
        if not self.broken:
            try:
                if self.waiting:
                    for remote in self.remotes:
                        remote.recv()
                for remote in self.remotes:
                    remote.send(("close", None))
            except (RuntimeError, EnvTimeout):
                pass  # a worker died or hung: the others are ended below
        for process in self.processes:
            process.join(JOIN_S if not self.broken else 0.1)
            if process.is_alive():
                process.kill()
                process.join(JOIN_S)
        for pipe in self.pipes:
            pipe.close()
        self.closed = True
