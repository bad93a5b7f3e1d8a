"""The one TensorBoard reader (TensorBoard's own EventAccumulator) and the one time-to-reach.

summary.json and report.md both read a unit's reward curve here, with wall times measured from
the same origin (the unit's `train_started`, see the trainer contract), so they cannot disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from runner.trainers.base import REWARD_TAG


class Curve(NamedTuple):
    """One unit's learning curve: env steps, values, seconds since training started (resumed
    segments joined, the time it was stopped left out); `segments` > 1 for a resumed unit."""

    steps: np.ndarray
    values: np.ndarray
    wall_s: np.ndarray
    segments: int = 1


def read_curve(
    tb_dir: Path, origin: float | None, tag: str = REWARD_TAG
) -> tuple[Curve | None, str | None]:
    """The `tag` curve under `tb_dir`, sorted by step, wall times in seconds since `origin`
    (None: the first event written); and a problem (missing, empty or corrupt files), or None.
    Readable files are used even when others are not. A resumed unit's segments (one event
    folder each) are joined by `runner.report.segments.join`: no repeated steps, and wall time
    counts training only, from its first segment's start (`origin` then applies to one segment
    only)."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    from runner.report.segments import Segment, join

    files = sorted(tb_dir.rglob("events.out.tfevents.*")) if tb_dir.is_dir() else []
    if not files:
        return None, f"no TensorBoard event files in {tb_dir}"
    segments, bad = [], []
    for folder in sorted({f.parent for f in files}):
        acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0})
        try:
            acc.Reload()
            start = acc.FirstEventTimestamp()
        except Exception:  # the reader raises several types for damaged or empty files
            bad += [f.name for f in files if f.parent == folder]
            continue
        points = (
            [(e.wall_time, e.step, e.value) for e in acc.Scalars(tag)]
            if tag in acc.Tags().get("scalars", [])
            else []
        )
        segments.append(Segment(folder.name, start, points))
    kind = ""
    if bad:
        empty = all(f.stat().st_size == 0 for f in files if f.name in bad)
        kind = "empty" if empty else "corrupt or unreadable"
    points, used = join(segments)
    if not points:
        why = f"{kind} event file(s) {', '.join(bad)}" if bad else f"no '{tag}' scalars"
        return None, f"{tb_dir}: {why}"
    wall, steps, values = (np.array(v, dtype=float) for v in zip(*points, strict=True))
    first = min(seg.start for seg in segments if seg.points)
    shift = first - origin if origin is not None and used == 1 else 0.0
    curve = Curve(steps, values, wall + shift, segments=used)
    return curve, (f"{tb_dir}: skipped {kind} event file(s) {', '.join(bad)}" if bad else None)


def time_to_reach(curve: Curve, level: float) -> tuple[float, float] | None:
    """(seconds, env steps) when the curve first reached `level`, or None if it never did."""
    hit = curve.values >= level
    if not hit.any():
        return None
    i = int(np.argmax(hit))
    return float(curve.wall_s[i]), float(curve.steps[i])
