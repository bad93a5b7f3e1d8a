"""The worker side of the Ray executor: a unit in a private temporary run directory on whatever
node Ray chose, its files returned to the driver as bytes when it ends.

While the unit runs, the task sends its status.json and progress.json to the driver's `Board`
actor once a second (the live display), and learns from the answer whether the driver was asked
to stop; then the unit is sent SIGTERM, checkpoints, and its files still come back.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.executors import unit_command
from runner.executors.local import _die_with_parent
from runner.executors.shipping import pack, unpack
from runner.record.rundir import UnitRef

GRACE_S = 60.0
LIVE_FILES = ("status.json", "progress.json")


class Board:
    """Lives on the driver's node: the latest live files of each unit, and the stop flag."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, str]] = {}
        self.starts: dict[str, int] = {}
        self.stop = False

    def started(self, key: str) -> bool:
        self.starts[key] = self.starts.get(key, 0) + 1
        return self.stop

    def put(self, key: str, files: dict[str, str]) -> bool:
        self.files.setdefault(key, {}).update(files)
        return self.stop

    def take(self) -> tuple[dict[str, dict[str, str]], dict[str, int]]:
        files, self.files = self.files, {}
        return files, dict(self.starts)

    def request_stop(self) -> None:
        self.stop = True


def _live(unit_dir: Path) -> dict[str, str]:
    out = {}
    for name in LIVE_FILES:
        with contextlib.suppress(OSError):
            out[name] = (unit_dir / name).read_text(encoding="utf-8")
    return out


def _ask(call: Any) -> bool:
    """The board's answer (stop?); a board that is gone means carry on."""
    import ray

    try:
        return bool(ray.get(call, timeout=30))
    except Exception:  # the driver's board is gone: the unit still finishes and returns
        return False


def _watch(proc: subprocess.Popen[bytes], board: Any, key: str, unit_dir: Path) -> int:
    stopping = False
    while proc.poll() is None:
        time.sleep(1.0)
        stop = _ask(board.put.remote(key, _live(unit_dir)))
        if stop and not stopping:
            stopping = True
            proc.send_signal(signal.SIGTERM)  # checkpoint, then exit 130
    try:
        return proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def run_shipped(
    resolved_text: str,
    variant: str,
    seed: int,
    jobs: list[str],
    files: bytes,
    board: Any,
    python: str | None = None,
) -> dict[str, Any]:
    """Run one unit here (with `python`, the interpreter its backend names, if any); returns its
    exit status, node and every file of its directory."""
    unit = UnitRef(variant, seed)
    with tempfile.TemporaryDirectory(prefix="rlcrate-unit-") as tmp:
        run_dir = Path(tmp)
        (run_dir / "resolved.yaml").write_text(resolved_text, encoding="utf-8")
        unit_dir = unit.dir(run_dir)
        unpack(files, unit_dir)
        if _ask(board.started.remote(unit.key)):
            return {"rc": 130, "node": socket.gethostname(), "files": pack(unit_dir)}
        with open(unit_dir / "unit.log", "ab") as log:
            proc = subprocess.Popen(
                unit_command(run_dir, unit, jobs, {variant: python}),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # a lost worker takes its unit with it
            )
        try:
            rc = _watch(proc, board, unit.key, unit_dir)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return {"rc": rc, "node": socket.gethostname(), "files": pack(unit_dir)}
