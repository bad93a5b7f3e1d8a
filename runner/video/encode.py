"""One episode's frames into one file: scaled to `eval.video.size`, encoded as they come (an
episode's frames are never all in memory: an MP4 through `ffmpeg`'s bounded pipe, a GIF with
imageio), under a temporary name until it is whole, with a poster frame for an MP4."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import VideoSpec
from runner.record.video import Clip
from runner.video.ffmpeg import FfmpegPipe

POSTER_AT_S = 1.0  # the poster is the frame one second in (the last one of a shorter episode)


class EpisodeWriter:
    """`add(frame)` per agent step, then `close()` -> its Clip. Raises OSError or RuntimeError
    (imageio's, ffmpeg's) when the file cannot be written."""

    def __init__(self, folder: Path, episode: int, spec: VideoSpec) -> None:
        self.folder, self.episode, self.spec = folder, episode, spec
        self.file = f"episode-{episode}.{spec.format}"
        # written under a temporary name, renamed once whole (`close`), removed on any failure
        self.tmp = folder / f".{self.file}.{os.getpid()}.tmp.{spec.format}"
        self.frames = 0
        self.drawn = False  # a frame of more than one colour came
        self.seconds = 0.0
        self.size: tuple[int, int] | None = None
        self.poster: Any = None
        self.writer: Any = None

    def add(self, frame: Any) -> None:
        t0 = time.perf_counter()
        frame = self._scaled(frame)
        self.drawn = self.drawn or bool((frame != frame[0, 0]).any())
        if self.writer is None:
            self.writer = self._open()
        if isinstance(self.writer, FfmpegPipe):
            self.writer.write(frame.tobytes())
        else:
            self.writer.append_data(frame)
        if self.frames <= POSTER_AT_S * self.spec.fps:
            self.poster = frame
        self.frames += 1
        self.seconds += time.perf_counter() - t0

    @property
    def blank(self) -> str:
        """Why the clip is of no use when frames came and all were one colour (the env drew
        nothing), else ""."""
        return f"every frame of {self.file} is one colour" if self.frames and not self.drawn else ""

    def _scaled(self, frame: Any) -> Any:
        import numpy as np

        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] not in (3, 4) or frame.dtype != np.uint8:
            raise RuntimeError(f"the env rendered {frame.shape} {frame.dtype}, not RGB bytes")
        frame = frame[..., :3]
        if self.size is None:
            w, h = self.spec.size or (frame.shape[1], frame.shape[0])
            even = self.spec.format == "mp4"  # H.264's 4:2:0 needs even sides
            self.size = (w - w % 2, h - h % 2) if even else (w, h)
        if (frame.shape[1], frame.shape[0]) != self.size:
            from PIL import Image

            frame = np.asarray(Image.fromarray(frame).resize(self.size, Image.Resampling.BILINEAR))
        return np.ascontiguousarray(frame)

    def _open(self) -> Any:
        import imageio.v2 as imageio

        self.folder.mkdir(parents=True, exist_ok=True)
        if self.spec.format == "gif":
            return imageio.get_writer(self.tmp, mode="I", duration=1000 / self.spec.fps, loop=0)
        assert self.size is not None  # the first frame is scaled before the file is opened
        return FfmpegPipe(self.tmp, self.size, self.spec.fps)

    def close(self) -> Clip:
        t0 = time.perf_counter()
        poster = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None
            os.replace(self.tmp, self.folder / self.file)
            if self.spec.format == "mp4" and self.poster is not None:
                from PIL import Image

                poster = f"episode-{self.episode}.png"
                Image.fromarray(self.poster).save(self.folder / poster)
        self.seconds += time.perf_counter() - t0
        w, h = self.size or (0, 0)
        return Clip(
            episode=self.episode,
            file=self.file,
            poster=poster,
            frames=self.frames,
            width=w,
            height=h,
            record_s=self.seconds,
        )

    def abandon(self) -> None:
        """Stop what is open after a failure (or an interrupt), ignoring a second one, and
        remove the temporary file: no half-written video under any name."""
        if isinstance(self.writer, FfmpegPipe):
            self.writer.kill()
        elif self.writer is not None:
            with contextlib.suppress(Exception):  # the first failure is the one reported
                self.writer.close()
        self.writer = None
        self.tmp.unlink(missing_ok=True)
