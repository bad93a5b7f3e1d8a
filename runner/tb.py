"""Reading TensorBoard event files with TensorBoard's own reader (EventAccumulator)."""

from __future__ import annotations

from pathlib import Path

Scalar = tuple[float, int, float]  # (wall_time, step, value)


class TBReadError(Exception):
    pass


def read_scalars(tb_dir: Path, tag: str) -> list[Scalar]:
    """All values of `tag` under `tb_dir`, sorted by step, with wall time as training seconds
    (resumed segments joined: `runner.segments`). Missing tag: []. Corrupt: TBReadError."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from runner.segments import Segment, join

    if not tb_dir.is_dir() or not any(tb_dir.rglob("events.out.tfevents.*")):
        raise TBReadError(f"{tb_dir}: no TensorBoard event files")
    segments = []
    for events in sorted({p.parent for p in tb_dir.rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        try:
            acc.Reload()
            start = acc.FirstEventTimestamp()
        except Exception as exc:  # the reader raises several types for damaged files
            raise TBReadError(f"{events}: unreadable TensorBoard file ({exc})") from None
        if tag in acc.Tags().get("scalars", []):
            points = [(e.wall_time, e.step, e.value) for e in acc.Scalars(tag)]
            segments.append(Segment(events.name, start, points))
    return join(segments)[0]


def time_to_reach(series: list[Scalar], level: float, start: float | None = None) -> float | None:
    """Seconds from `start` (default: the first logged point) until the value first reaches
    `level` (None: never)."""
    if not series:
        return None
    if start is None:
        start = min(w for w, _, _ in series)
    for wall, _, value in series:
        if value >= level:
            return wall - start
    return None
