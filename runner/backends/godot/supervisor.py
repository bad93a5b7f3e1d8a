"""One Godot process under supervision: a port, a log, a deadline and a guaranteed end.

godot-rl's own launcher uses fixed ports (11008 + p), splits the command line on spaces, never
times out and leaves games behind. Here each process gets a listening socket on a port the OS
picks (bound before the game starts, so nothing can take it in between), its argv is passed as a
list, its output goes to a log file, and its whole process group is ended on close, on errors,
at interpreter exit and on SIGTERM. The game itself quits when the connection drops, which
covers a runner killed with SIGKILL.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from pathlib import Path

from runner.errors import EnvTimeout, RunnerError

_LIVE: weakref.WeakSet[GodotProcess] = weakref.WeakSet()
_TAIL_LINES = 6


class GodotExited(RunnerError):
    """A Godot process exited or dropped its connection while the runner was waiting on it."""


class GodotProcess:
    """A launched game that is expected to connect back to `127.0.0.1:port`."""

    def __init__(self, argv: list[str], *, index: int, log_path: Path):
        self.index = index
        self.log_path = log_path
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1)
        self.port: int = self._listener.getsockname()[1]
        self.argv = [*argv, f"--port={self.port}"]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in kill()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: Ctrl-C goes to us, we end the group
                env=_game_env(),
            )
        except OSError as exc:
            self._listener.close()
            self._log.close()
            raise RunnerError(f"could not start Godot ({self.argv[0]}): {exc.strerror}") from None
        self.pid = self.proc.pid
        self._owner = os.getpid()
        _LIVE.add(self)
        _install_sigterm_handler()

    def describe(self) -> str:
        return f"Godot process {self.index} (pid {self.pid}, port {self.port})"

    def tail(self, n: int = _TAIL_LINES) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()][-n:]
        return " | ".join(lines) if lines else "(log is empty)"

    def accept(self, timeout: float) -> socket.socket:
        """Waits for the game to connect; fails fast if it exits first."""
        deadline = time.monotonic() + timeout
        self._listener.settimeout(0.1)
        while True:
            try:
                conn, _ = self._listener.accept()
                break
            except TimeoutError:
                pass
            if self.proc.poll() is not None:
                raise GodotExited(
                    f"{self.describe()} exited with code {self.proc.returncode} before "
                    f"connecting; log {self.log_path}: {self.tail()}"
                )
            if time.monotonic() > deadline:
                raise EnvTimeout(
                    f"{self.describe()} did not connect within {timeout:g} s (env.timeout); "
                    f"log {self.log_path}: {self.tail()}"
                )
        self._listener.close()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def exit_code(self, wait: float = 0.5) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(wait)
        return self.proc.returncode

    def kill(self, grace: float = 0.0) -> None:
        """Ends the process group (after `grace` seconds for a clean exit) and reaps it."""
        self._listener.close()
        if self.proc.poll() is None and grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(grace)
        for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
            if self.proc.poll() is not None:
                break
            # The whole group, while its leader is unreaped (so the id cannot have been reused).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(wait)
        self._log.close()
        _LIVE.discard(self)


def _game_env() -> dict[str, str]:
    env = dict(os.environ)
    if env.get("LANG", "C").split(".")[0] in ("C", "POSIX", ""):
        env["LANG"] = "en_US.UTF-8"  # Godot logs two errors for the C locale; keep logs clean
    return env


def kill_all() -> None:
    for proc in list(_LIVE):
        if proc._owner == os.getpid():  # not in a forked child that inherited the set
            proc.kill()


atexit.register(kill_all)

_sigterm_installed = False


def _on_sigterm(signum, frame):
    kill_all()
    # Unwind like an ordinary exit so callers' finally blocks and atexit handlers still run.
    raise SystemExit(128 + signum)


def _install_sigterm_handler() -> None:
    """Ends our games on SIGTERM, unless the application handles SIGTERM itself."""
    global _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(ValueError):
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    _sigterm_installed = True
