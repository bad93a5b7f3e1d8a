"""A unit's video/video.json: the evaluation episodes recorded as videos (`eval.video`), one typed
model, written here alone and read through `read_video` (the report shows them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned

VIDEO_DIR = "video"  # under the unit's directory
VIDEO_FILE = "video.json"


class Clip(BaseModel):
    """One recorded episode."""

    model_config = ConfigDict(extra="forbid")

    episode: int = Field(ge=0, description="Its index among the evaluation's episodes.")
    # names of the one shape the capture writes: a damaged or hostile record names nothing else
    # (report.md links them)
    file: str = Field(
        pattern=r"^episode-[0-9]+\.(mp4|gif)$",
        description="The video's file name, in the unit's video/ folder.",
    )
    poster: str | None = Field(
        None,
        pattern=r"^episode-[0-9]+\.png$",
        description="A PNG frame of it (mp4), for the report.",
    )
    frames: int = Field(ge=0, description="Frames written: one per agent step.")
    width: int = Field(ge=0)
    height: int = Field(ge=0)
    record_s: float = Field(
        ge=0, description="Seconds spent rendering, scaling and encoding its frames."
    )


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1: `format` (mp4 or gif) became `encoding`, making room for the record's."""
    rest = {k: v for k, v in data.items() if k != "format"}
    return {**rest, "format": 1, "written_by": None, "encoding": data.get("format")}


class VideoRecord(Versioned):
    """video.json."""

    model_config = ConfigDict(extra="forbid")
    # format 0 named its clips' encoding `format`
    FORMAT = Format(VIDEO_FILE, 1, (from_unversioned,), lambda d: isinstance(d.get("format"), str))

    encoding: str = Field(description="The clips' encoding: mp4 or gif.")
    fps: int
    clips: list[Clip]
    equivalent: str | None = Field(
        None,
        description="Recorded on an equivalent env, not from the evaluation (EnvPool's: "
        "Gymnasium's same task): what the clips then show.",
    )


def write_video_record(unit_dir: Path, record: VideoRecord) -> None:
    write_json_atomic(unit_dir / VIDEO_DIR / VIDEO_FILE, record.as_written())


def read_video(unit_dir: Path) -> VideoRecord | None:
    """A unit's video.json, checked; None when missing or damaged."""
    return read_record(VideoRecord, unit_dir / VIDEO_DIR / VIDEO_FILE)
