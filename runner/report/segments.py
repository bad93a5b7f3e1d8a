"""Joining a unit's TensorBoard segments into one learning curve.

A unit that was stopped and resumed logs each training segment to its own folder
(`tb/resumed-<step>/` for one continued from the checkpoint at <step>; a unit restarted from
scratch starts a new `tb/<ALGO>_<n>/`). Joined naively, the steps a later segment repeats show
twice (a dip where the unit restarted) and the wall-clock axis counts the time it was stopped.
Here a later segment supersedes every earlier point after the step it resumed from, and
wall time is training time: each segment's clock continues where the kept curve ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Point = tuple[float, int, float]  # (wall_time, step, value)
RESUMED = re.compile(r"^resumed-(\d+)$")


@dataclass
class Segment:
    folder: str  # the event folder's name
    start: float  # its first event's wall time
    points: list[Point]

    @property
    def resumed_from(self) -> int | None:
        """The checkpoint step this segment continued from (None: it started from scratch)."""
        m = RESUMED.match(self.folder)
        return int(m.group(1)) if m else None


def join(segments: list[Segment]) -> tuple[list[tuple[float, int, float]], int]:
    """(points as (training seconds, step, value) in step order, number of segments used).

    Segments are taken in the order they started; a segment resumed from step N drops earlier
    points after step N, one started from scratch drops all earlier points.
    """
    kept: list[tuple[float, int, float]] = []
    used = 0
    for seg in sorted(segments, key=lambda s: s.start):
        if not seg.points:
            continue
        used += 1
        cut = seg.resumed_from
        kept = [] if cut is None else [p for p in kept if p[1] <= cut]
        offset = max((p[0] for p in kept), default=0.0)
        kept += [(offset + (w - seg.start), step, v) for w, step, v in sorted(seg.points)]
    return sorted(kept, key=lambda p: (p[1], p[0])), used
