"""Videos of episodes already played: for a trainer whose evaluation runs as one compiled program
(Brax's PPO: every episode in a single jitted scan), which keeps the states of its first
episodes and draws their frames afterwards. They are still the very episodes eval.json scores.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from runner.manifest.schema import VideoSpec
from runner.record.video import VIDEO_DIR, Clip, VideoRecord, write_video_record
from runner.video.capture import VideoFailed
from runner.video.encode import EpisodeWriter


def record_episodes(
    episodes: Iterable[Iterable[Any]], spec: VideoSpec, unit_dir: Path
) -> VideoRecord:
    """Write each episode's frames (drawn as they are iterated) to its clip, then video.json;
    VideoFailed when a frame cannot be drawn or a file written (the caller has recorded the
    evaluation first: eval.json stays)."""
    folder = unit_dir / VIDEO_DIR
    shutil.rmtree(folder, ignore_errors=True)  # no clip of an earlier recording
    clips: list[Clip] = []
    for number, frames in enumerate(episodes):
        writer = EpisodeWriter(folder, number, spec)
        try:
            for frame in _timed(frames, writer):
                writer.add(frame)
            clips.append(writer.close())
        except Exception as exc:  # a renderer's own error (an OpenGL context), a full disk
            writer.abandon()
            raise VideoFailed(
                f"eval.video: cannot write {folder / writer.file}: {type(exc).__name__}: {exc}; "
                "eval.json is kept"
            ) from exc
        if writer.blank:
            raise VideoFailed(
                f"eval.video: {writer.blank} (the renderer drew nothing); eval.json is kept"
            )
    record = VideoRecord(encoding=spec.format, fps=spec.fps, clips=clips, equivalent=None)
    write_video_record(unit_dir, record)
    return record


def _timed(frames: Iterable[Any], writer: EpisodeWriter) -> Iterator[Any]:
    """The frames, their drawing time added to the clip's recording time."""
    it = iter(frames)
    while True:
        t0 = time.perf_counter()
        try:
            frame = next(it)
        except StopIteration:
            return
        finally:
            writer.seconds += time.perf_counter() - t0
        yield frame
