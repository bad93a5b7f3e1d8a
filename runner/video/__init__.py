"""Videos of a unit's evaluation (`eval.video`): its first episodes' frames, captured as the
evaluation steps them (`capture`), scaled and encoded to MP4 or GIF with imageio (`encode`).

A trainer records by wrapping its evaluation's VecEnv (`capture.recording`), built from the
backend's `video_env` (the same env, rendering frames); the files and their `video.json`
(`record.video`) land in the unit's video/ folder, and `report` shows them.
"""

from __future__ import annotations

import importlib.util

from runner.errors import FieldProblem
from runner.manifest.schema import VideoSpec

# The module each format is written with: mp4 through the ffmpeg binary imageio-ffmpeg brings,
# gif through Pillow.
WRITERS = {"mp4": "imageio_ffmpeg", "gif": "PIL"}


def problems(spec: VideoSpec) -> list[FieldProblem]:
    """What this Python lacks to write `spec`'s videos, at eval.video's fields."""
    missing = [m for m in ("imageio", WRITERS[spec.format]) if importlib.util.find_spec(m) is None]
    if not missing:
        return []
    msg = f"needs {', '.join(missing)}, which is not installed (pip install 'rlcrate[video]')"
    return [FieldProblem(("eval", "video", "format"), msg)]
