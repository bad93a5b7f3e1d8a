"""An MP4 written by the ffmpeg binary imageio-ffmpeg brings, fed frames through a pipe that is
never waited on without a bound.

imageio's own writer blocks on a full pipe when ffmpeg stops reading (a hung ffmpeg hangs the
evaluation) and, closing, waits on it forever; it also keeps a file ffmpeg was killed in the
middle of. Here each frame must be taken within `stall_s()` seconds and the file finished within
as long after the last one, else ffmpeg (its whole session) is killed and the episode's video
fails in one line; the caller writes to a temporary name and keeps the file only when ffmpeg
exited 0. The command line is the one imageio builds for `eval.video` (raw RGB in, H.264 in
yuv420p out), so the files are the same.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from fractions import Fraction
from pathlib import Path

STALL_S = 60.0  # RLCRATE_FFMPEG_TIMEOUT: seconds ffmpeg may take to take a frame, or to finish


def stall_s() -> float:
    from runner.errors import SettingError

    value = os.environ.get("RLCRATE_FFMPEG_TIMEOUT")
    if value is None:
        return STALL_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0.5 <= seconds <= 3600:
        raise SettingError(
            f"RLCRATE_FFMPEG_TIMEOUT={value!r}: expected seconds between 0.5 and 3600"
        )
    return seconds


class FfmpegPipe:
    """`write(frame bytes)` per frame, then `close()`; RuntimeError (one line) when ffmpeg ends,
    fails or stops answering (then it is killed)."""

    def __init__(self, path: Path, size: tuple[int, int], fps: int) -> None:
        import imageio_ffmpeg

        rate = str(Fraction(fps).limit_denominator())
        cmd = [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-y", "-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{size[0]}x{size[1]}",
            "-pix_fmt", "rgb24", "-r", rate, "-i", "-", "-an",
            "-vcodec", "libx264", "-pix_fmt", "yuv420p", "-v", "error", str(path),
        ]  # fmt: skip
        self.timeout = stall_s()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # killed whole; Ctrl-C reaches the unit, which stops it
        )
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.fd = self.proc.stdin.fileno()
        os.set_blocking(self.fd, False)
        self.errors: list[bytes] = []
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors = [*self.errors[-20:], line]

    def _said(self) -> str:
        lines = [ln.decode("utf-8", "replace").strip() for ln in self.errors]
        said = next((ln for ln in reversed(lines) if ln), "")
        return f": {said[:200]}" if said else ""

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + self.timeout
        while view:
            left = deadline - time.monotonic()
            ready = select.select([], [self.fd], [], max(left, 0.0))[1] if left > 0 else []
            if not ready:
                self.kill()
                raise RuntimeError(
                    f"ffmpeg took no frame for {self.timeout:g} s (hung?) and was stopped "
                    "(RLCRATE_FFMPEG_TIMEOUT)"
                )
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                self._ended()
                raise RuntimeError(self._exit_line()) from None

    def close(self) -> None:
        """Wait for the file to be finished; RuntimeError unless ffmpeg exited 0."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(
                f"ffmpeg did not finish the file within {self.timeout:g} s (hung?) and was "
                "stopped (RLCRATE_FFMPEG_TIMEOUT)"
            ) from None
        self._ended()
        if self.proc.returncode != 0:
            raise RuntimeError(self._exit_line())

    def _ended(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=self.timeout)
        self.reader.join(timeout=1)

    def _exit_line(self) -> str:
        code = self.proc.poll()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited {code}"
        return f"ffmpeg {how} before the file was finished{self._said()}"

    def kill(self) -> None:
        """Stop ffmpeg and whatever it started, now (after a failure, or an interrupt)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
