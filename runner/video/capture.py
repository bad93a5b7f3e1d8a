"""The capture: a VecEnv wrapper around a one-env evaluation that writes the frames of its first
`eval.video.episodes` episodes as they are stepped, so the videos show the very episodes the
evaluation scores. It only reads frames (`get_images`): observations, rewards and dones pass
through untouched.

Frame t of an episode is the state the agent acts on at its step t (the first after the reset),
so an episode of N agent steps has N frames; the state after its last step is not shown (a
VecEnv has already reset it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runner.errors import RunnerError
from runner.manifest.schema import VideoSpec
from runner.record.video import VIDEO_DIR, Clip, VideoRecord, write_video_record
from runner.video.encode import EpisodeWriter


class VideoFailed(RunnerError):
    """A video could not be written; the evaluation itself went on and was recorded."""


def recording(venv: Any, spec: VideoSpec, unit_dir: Path, *, blank_hint: str = "") -> Any:
    """`venv` (one env, rendering rgb_array frames) wrapped in the capture; after the
    evaluation, `finish(capture)` writes video.json or raises what went wrong: among it, an
    episode whose every frame is one colour (the env drew nothing: `blank_hint` says what to
    do, `Backend.video_blank_hint`)."""
    import shutil

    from stable_baselines3.common.vec_env import VecEnvWrapper

    shutil.rmtree(unit_dir / VIDEO_DIR, ignore_errors=True)  # no clip of an earlier recording

    class Capture(VecEnvWrapper):
        def __init__(self) -> None:
            super().__init__(venv)
            self.folder = unit_dir / VIDEO_DIR
            self.clips: list[Clip] = []
            self.writer: EpisodeWriter | None = None
            self.failure: str | None = None

        def reset(self) -> Any:
            obs = self.venv.reset()
            self._next_episode()
            return obs

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            if dones[0]:
                self._end_episode()
            else:
                self._grab()
            return obs, rewards, dones, infos

        def _next_episode(self) -> None:
            if self.failure is None and len(self.clips) < spec.episodes:
                self.writer = EpisodeWriter(self.folder, len(self.clips), spec)
                self._grab()

        def _end_episode(self) -> None:
            writer = self.writer
            if writer is not None:
                self._guarded(lambda w: self.clips.append(w.close()))
                self.writer = None
                if self.failure is None and writer.blank:
                    self.failure = f"{writer.blank}: {blank_hint}"
            self._next_episode()  # the env has reset: this frame starts the next episode

        def _grab(self) -> None:
            if self.writer is None:
                return
            t0 = time.perf_counter()
            try:
                frame = self.venv.get_images()[0]
            except Exception as exc:  # a renderer's own error (an OpenGL context, a dead game)
                frame = None
                why = f"{type(exc).__name__}: {exc}"
            else:
                why = "get_images gave None"
            self.writer.seconds += time.perf_counter() - t0
            if frame is None:
                self.writer.abandon()
                self.failure = f"the env rendered no frame ({why})"
                self.writer = None
                return
            self._guarded(lambda w: w.add(frame))

        def _guarded(self, act: Any) -> None:
            writer = self.writer
            assert writer is not None
            try:
                act(writer)
            except (OSError, RuntimeError, ValueError) as exc:
                writer.abandon()
                self.failure = f"cannot write {self.folder / writer.file}: {exc}"
                self.writer = None

        def close(self) -> None:
            if self.writer is not None:
                self.writer.abandon()
            self.venv.close()

    return Capture()


def finish(
    capture: Any, spec: VideoSpec, unit_dir: Path, equivalent: str | None = None
) -> VideoRecord:
    """Write video.json for what `capture` recorded (`equivalent`: what a recording on an
    equivalent env shows); VideoFailed when a video could not be written (the caller has
    recorded the evaluation first: eval.json stays)."""
    if capture.failure is not None:
        raise VideoFailed(f"eval.video: {capture.failure}; eval.json is kept")
    record = VideoRecord(
        encoding=spec.format, fps=spec.fps, clips=capture.clips, equivalent=equivalent
    )
    write_video_record(unit_dir, record)
    return record
